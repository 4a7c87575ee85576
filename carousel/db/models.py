"""The queue's tables. One row per path in `files` (so a file asked for by many requests is recalled once);
`request_files` links a request to the files it names and keeps that requester's own view of each file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.media import DownMode, DriveState, MediaKind, TapeState
from carousel.domain.states import DeliveryState, FileState, LinkState, RequestState

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

LIBRARY_LENGTH = 32  # carousel.domain.libraries: names are checked at the edge (settings)

# BIGINT on PostgreSQL, INTEGER (the rowid alias) on SQLite so primary keys autoincrement there too.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """Stores aware UTC and reads it back aware, on PostgreSQL and on SQLite (which keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: carousel stores timezone-aware UTC only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _in(values: type[StrEnum]) -> str:
    return ", ".join(f"'{v.value}'" for v in values)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class StageRequest(Base):
    __tablename__ = "requests"
    __table_args__ = (CheckConstraint(f"state IN ({_in(RequestState)})", name="state"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner: Mapped[str] = mapped_column(String(256), index=True)
    grp: Mapped[str] = mapped_column("grp", String(128), default="default")
    activity: Mapped[str] = mapped_column(String(128), default="default")
    priority: Mapped[int] = mapped_column(Integer, default=0)
    api: Mapped[str] = mapped_column(String(16))  # tape_rest | native | xrootd
    state: Mapped[str] = mapped_column(String(16), default=RequestState.ACTIVE.value)
    files_total: Mapped[int] = mapped_column(Integer)
    client_info: Mapped[str | None] = mapped_column(Text, default=None)
    colocation: Mapped[str | None] = mapped_column(String(256), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # bumped by intake's writes that change the status (cancel, delete): a cached status document is
    # checked against it on every call, in every API process (carousel.api.status_cache)
    status_version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))


class RequestAlias(Base):
    """Another name for a request (XRootD's own request id), unique per caller: another caller's aliases
    are neither seen nor blocked (revision 0007)."""

    __tablename__ = "request_aliases"

    owner: Mapped[str] = mapped_column(String(256), primary_key=True)  # the request's owner
    alias: Mapped[str] = mapped_column(String(256), primary_key=True)
    request_id: Mapped[str] = mapped_column(ForeignKey("requests.id", ondelete="CASCADE"), index=True)


class QueuedFileRow(Base):
    __tablename__ = "files"
    __table_args__ = (
        CheckConstraint(f"state IN ({_in(FileState)})", name="state"),
        CheckConstraint("attempts >= 0", name="attempts"),
        # The scheduler's hot path: queued files of one tape in head order (as CTA's scheduler indexes it).
        Index("ix_files_tape_state_position", "tape", "state", "position_bytes", "id"),
        Index("ix_files_state_queued_at", "state", "queued_at", "id"),
        # files backing off after a failed read (few): the snapshot subtracts them from the tape queues.
        # Partial, so that it stays small and is chosen even before the table has statistics (0013).
        Index(
            "ix_files_backing_off",
            "not_before",
            "tape",
            postgresql_where=text("not_before IS NOT NULL"),
            sqlite_where=text("not_before IS NOT NULL"),
        ),
        # eviction's question: files in the buffer, least recently used first (only those on disk)
        Index(
            "ix_files_disk_used_at",
            "disk_used_at",
            postgresql_where=text("disk_used_at IS NOT NULL"),
            sqlite_where=text("disk_used_at IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    path: Mapped[str] = mapped_column(String(4096), unique=True)
    state: Mapped[str] = mapped_column(String(16))
    tape: Mapped[str | None] = mapped_column(String(64), default=None)
    # the library holding the copy read (docs/decisions.md §17): a tape is (library, tape)
    library: Mapped[str] = mapped_column(
        String(LIBRARY_LENGTH), default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    position_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    service_class: Mapped[str] = mapped_column(String(64), default="default")
    grp: Mapped[str] = mapped_column(
        "grp", String(128), default="default"
    )  # group of the oldest active asker
    priority: Mapped[int] = mapped_column(Integer, default=0)  # highest priority among active askers
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, default=None)  # last failure, or why it is UNRESOLVED
    batch_key: Mapped[str | None] = mapped_column(String(64), default=None, index=True)
    queued_at: Mapped[datetime] = mapped_column(UtcDateTime())  # arrival that (re)queued this recall
    not_before: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)  # retry back-off
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    submitted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    on_disk: Mapped[bool] = mapped_column(default=False)
    checksum: Mapped[str | None] = mapped_column(String(8), default=None)  # adler32, 8 lower-case hex digits
    # NOT NULL exactly while the file's bytes are in the disk buffer: when they landed or were last read or
    # asked for (eviction takes the least recently used first). With the buffer on, on_disk follows it.
    disk_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class TapeQueueKind(StrEnum):
    QUEUED = "Q"
    IN_FLIGHT = "F"  # claimed or submitted


class TapeQueue(Base):
    """What `files` holds per tape, group and class of service: queued (kind "Q") or in flight (claimed or
    submitted, kind "F"), so the scheduler's snapshot reads one row per tape and group instead of every queued
    file. Triggers on `files` (migration 0003) append each change to tape_queue_deltas; the snapshot folds
    them in (carousel.db.queue_queries.read_demand). oldest and max_priority are those of the queued files
    (kind "Q" only); files backing off after a failed read are counted here and taken out by the snapshot."""

    __tablename__ = "tape_queues"

    library: Mapped[str] = mapped_column(String(LIBRARY_LENGTH), primary_key=True)  # migration 0010
    tape: Mapped[str] = mapped_column(String(64), primary_key=True)
    grp: Mapped[str] = mapped_column("grp", String(128), primary_key=True)
    service_class: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(1), primary_key=True)
    files: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    retries: Mapped[int] = mapped_column(Integer)  # queued files whose read failed before
    oldest: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    max_priority: Mapped[int] = mapped_column(Integer)


class TapeQueueDelta(Base):
    """One change to a tape queue, appended by the triggers on `files`: only inserts, so writers of `files`
    never wait for each other here (a claim keeps FOR UPDATE SKIP LOCKED). arriving_*: the oldest and most
    urgent queued file that came in; leaving_*: those that went (the fold looks at the tape again then)."""

    __tablename__ = "tape_queue_deltas"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    library: Mapped[str] = mapped_column(String(LIBRARY_LENGTH))
    tape: Mapped[str] = mapped_column(String(64))
    grp: Mapped[str] = mapped_column("grp", String(128))
    service_class: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(1))
    files: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    retries: Mapped[int] = mapped_column(Integer)
    arriving_oldest: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    arriving_priority: Mapped[int | None] = mapped_column(Integer, default=None)
    leaving_oldest: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    leaving_priority: Mapped[int | None] = mapped_column(Integer, default=None)


class TapeQueueVersion(Base):
    """One row: the tape queues' version, which each fold that finds deltas takes next before it changes
    them (migration 0013), so folds run one at a time and a reader keeping a copy knows when it is stale."""

    __tablename__ = "tape_queue_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger)


class RequestFile(Base):
    __tablename__ = "request_files"
    __table_args__ = (CheckConstraint(f"state IN ({_in(LinkState)})", name="state"),)

    request_id: Mapped[str] = mapped_column(ForeignKey("requests.id", ondelete="CASCADE"), primary_key=True)
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True)  # position in the client's list
    file_id: Mapped[int] = mapped_column(ForeignKey("files.id"), index=True)
    path: Mapped[str] = mapped_column(String(4096))  # as the client named it (normalised)
    state: Mapped[str] = mapped_column(String(16), default=LinkState.PENDING.value)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    released_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    lifetime_s: Mapped[int | None] = mapped_column(Integer, default=None)  # as asked, cut to the maximum
    # the pin this link holds on its file's disk copy lasts to this epoch second (set when the bytes land
    # or when the link joins a file already on disk)
    pin_until_s: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # When the recall that ended this link had started (carousel.db.link_start); NULL while pending.
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class Mount(Base):
    """Mount history reported by the HSM: the raw material of the throughput reports."""

    __tablename__ = "mounts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    tape: Mapped[str] = mapped_column(String(64), index=True)
    library: Mapped[str] = mapped_column(
        String(LIBRARY_LENGTH), default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    drive: Mapped[str | None] = mapped_column(String(64), default=None)
    mounted_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    unmounted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    files: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)


class Recall(Base):
    """One attempt at reading one file: what was submitted when, and how it ended."""

    __tablename__ = "recalls"
    __table_args__ = (
        # completion's key: the open recall of a file in a batch (revision 0012)
        Index(
            "ix_recalls_open",
            "file_id",
            "batch_key",
            postgresql_where=text("finished_at IS NULL"),
            sqlite_where=text("finished_at IS NULL"),
        ),
        # fair share: the recalls one mount started (its tape and drive, while it was mounted)
        Index("ix_recalls_tape_drive_started_at", "tape", "drive", "started_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    file_id: Mapped[int] = mapped_column(ForeignKey("files.id"), index=True)
    batch_key: Mapped[str] = mapped_column(String(64), index=True)
    tape: Mapped[str] = mapped_column(String(64))
    library: Mapped[str] = mapped_column(
        String(LIBRARY_LENGTH), default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    submitted_at: Mapped[datetime] = mapped_column(UtcDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None, index=True)
    outcome: Mapped[str | None] = mapped_column(String(16), default=None)  # STAGED | FAILED | CANCELLED
    drive: Mapped[str | None] = mapped_column(String(64), default=None)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    reason: Mapped[str | None] = mapped_column(Text, default=None)


class AppliedEvent(Base):
    """Adapter events already applied, so completion is idempotent across restarts. Kept for
    `applied_events_retention_s` after the event (carousel.scheduler.event_pruning): an event comes again
    only moments after its first delivery."""

    __tablename__ = "applied_events"

    adapter: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    event_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)  # when the library says it happened


class PolicySettingsRow(Base):
    """The active scheduling policy as admins set it (carousel.policy_admin): one row, id 1, read by every
    cycle. Until the first change the settings' `policy` and `policy_options` are active."""

    __tablename__ = "policy_settings"
    __table_args__ = (
        CheckConstraint("id = 1", name="one_row"),
        CheckConstraint("version >= 1", name="version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    policy: Mapped[str] = mapped_column(String(64))
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    version: Mapped[int] = mapped_column(Integer)  # counts changes: a cycle rebuilds its policy when it moves
    changed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    changed_by: Mapped[str] = mapped_column(String(256))


class PolicyAudit(Base):
    """Every change of the active policy: who, when, from what, to what, and why. Rows are only added."""

    __tablename__ = "policy_audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    who: Mapped[str] = mapped_column(String(256))
    reason: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)  # the version the change made
    old_policy: Mapped[str] = mapped_column(String(64))
    old_options: Mapped[dict[str, Any]] = mapped_column(JSON)
    new_policy: Mapped[str] = mapped_column(String(64))
    new_options: Mapped[dict[str, Any]] = mapped_column(JSON)


class RequestWebhook(Base):
    """A URL to tell when a request is done (carousel.webhooks). The secret signs each delivery, so it is
    kept as given; it is never shown again."""

    __tablename__ = "request_webhooks"
    __table_args__ = (UniqueConstraint("request_id", "url"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # found by request through the unique (request_id, url)
    request_id: Mapped[str] = mapped_column(ForeignKey("requests.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    secret: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookDelivery(Base):
    """The outbox: one notification to one webhook, written in the transaction that made its request DONE.
    Its id is the delivery id the receiver sees (the same on every attempt: receivers deduplicate on it)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        CheckConstraint(f"state IN ({_in(DeliveryState)})", name="state"),
        CheckConstraint("attempts >= 0", name="attempts"),
        # the deliverer's question: PENDING ones due now, oldest first
        Index("ix_webhook_deliveries_state_next_attempt_at", "state", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("request_webhooks.id", ondelete="CASCADE"), index=True)
    request_id: Mapped[str] = mapped_column(String(36))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default=DeliveryState.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # attempts started
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_status: Mapped[int | None] = mapped_column(Integer, default=None)  # HTTP status of the last answer
    last_error: Mapped[str | None] = mapped_column(Text, default=None)


# --- tapes and drives as operators set them (carousel.media_admin, docs/admin.md) -------------------------


class TapeStateRow(Base):
    """A tape's state when it is not plainly active, or once it was changed: no row means `active`. Read by
    every cycle (held tapes are left out of the plan; broken ones have their queued files failed)."""

    __tablename__ = "tape_states"
    __table_args__ = (
        CheckConstraint(f"state IN ({_in(TapeState)})", name="state"),
        CheckConstraint("failed_mounts >= 0", name="failed_mounts"),
    )

    # the library holding it (migration 0014): the same name in two libraries is two tapes
    library: Mapped[str] = mapped_column(
        String(LIBRARY_LENGTH), primary_key=True, default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    tape: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    changed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    changed_by: Mapped[str | None] = mapped_column(String(256), default=None)
    # consecutive mounts the library reported failed; a mount that works sets it back to 0
    failed_mounts: Mapped[int] = mapped_column(Integer, default=0)


class DriveStateRow(Base):
    """The state an admin wants a drive in (no row: up). The scheduler's leader hands each change to the
    library's adapter."""

    __tablename__ = "drive_states"
    __table_args__ = (
        CheckConstraint(f"state IN ({_in(DriveState)})", name="state"),
        CheckConstraint(f"mode IS NULL OR mode IN ({_in(DownMode)})", name="mode"),
    )

    # the library holding it (migration 0014): the same name in two libraries is two drives
    library: Mapped[str] = mapped_column(
        String(LIBRARY_LENGTH), primary_key=True, default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    drive: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    mode: Mapped[str | None] = mapped_column(String(16), default=None)
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    changed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    changed_by: Mapped[str] = mapped_column(String(256))


class MediaAudit(Base):
    """Every change of a tape's or a drive's state: who (an admin, or `service` for the library's reports),
    when, from what, to what, and why. Rows are only added."""

    __tablename__ = "media_audit"
    __table_args__ = (CheckConstraint(f"kind IN ({_in(MediaKind)})", name="kind"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    who: Mapped[str] = mapped_column(String(256))
    kind: Mapped[str] = mapped_column(String(8))
    library: Mapped[str] = mapped_column(  # migration 0014
        String(LIBRARY_LENGTH), default=DEFAULT_LIBRARY, server_default=DEFAULT_LIBRARY
    )
    name: Mapped[str] = mapped_column(String(64))
    old_state: Mapped[str] = mapped_column(String(32))
    new_state: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text)


class RateBucket(Base):
    """A call-rate token bucket ("caller:<name>", "group:<name>"), shared by every API process
    (carousel.api.rate_limit). A row idle long enough to be full again is pruned: no row is a full bucket."""

    __tablename__ = "rate_buckets"

    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
