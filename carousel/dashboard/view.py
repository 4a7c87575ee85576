"""What the dashboard shows, gathered in one read-only session: the queue by group and state, the tapes with
work, the library as its adapter sees it now, the disk buffer, the last day's throughput per drive, recent
policy changes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from carousel.dashboard.policy_changes import PolicyChange, recent_policy_changes
from carousel.db import buffer_queries
from carousel.db.library_queries import StrandedWork, waiting_outside
from carousel.db.media_queries import drives_down, held_tape_statuses
from carousel.db.overview_queries import (
    QueueCell,
    TapeWork,
    busiest_tapes,
    count_tapes_with_work,
    queue_by_state_and_group,
)
from carousel.db.report_queries import history_began, split_drive_key
from carousel.domain.buffer import BufferLimits, BufferUsage, admissible_bytes, epoch_s, free_bytes
from carousel.domain.media import DriveStatus, TapeStatus
from carousel.domain.planning import LibraryCosts
from carousel.domain.states import FILE_ACTIVE, FILE_IN_FLIGHT, FILE_WAITING, FileState
from carousel.reports.tally import Tally, tally, totals_by_key
from carousel.reports.window import Bucket, Window, make_window
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import Site, site_adapters

RECENT = timedelta(days=1)
TAPES_SHOWN = 12
HELD_TAPES_SHOWN = 20
POLICY_CHANGES_SHOWN = 10
# the columns of the queue table, in the order a file goes through them
STATES = tuple(s for s in FileState if s in FILE_ACTIVE)


@dataclass(frozen=True, slots=True)
class GroupQueue:
    group: str
    files: dict[FileState, int]
    bytes: int
    oldest_waiting: datetime | None  # earliest queued_at among its UNRESOLVED and QUEUED files

    @property
    def total(self) -> int:
        return sum(self.files.values())


@dataclass(frozen=True, slots=True)
class Library:
    health: str  # ONLINE, DEGRADED, OFFLINE, or "unknown" when the adapter did not answer
    drives_total: int | None
    drives_busy: int | None
    mounted_tapes: tuple[str, ...]
    problem: str | None = None
    description: str | None = None  # what the library is, if its adapter says (simulated: its clock scale)
    # a site of several (docs/decisions.md §17): each library by name, as above; this one adds them up
    libraries: tuple[tuple[str, Library], ...] = ()


@dataclass(frozen=True, slots=True)
class DriveLine:
    """One drive's last day: a drive is (library, drive), the same name in two libraries two drives
    (docs/decisions.md §17)."""

    library: str
    drive: str
    tally: Tally

    @property
    def efficiency(self) -> float | None:
        return self.tally.reading_s / self.tally.mounted_s if self.tally.mounted_s > 0 else None


@dataclass(frozen=True, slots=True)
class Throughput:
    window: Window
    total: Tally
    drives: list[DriveLine]
    transfer_s: float | None  # estimated from the published rate, None when the library publishes none
    # what the figures really cover: from the window's start or the recorded history's, whichever is later
    covered_since: datetime | None = None  # None: the whole window

    @property
    def covered_s(self) -> float:
        since = (
            self.window.since if self.covered_since is None else max(self.covered_since, self.window.since)
        )
        return max((self.window.until - since).total_seconds(), 0.0)

    @property
    def whole_window(self) -> bool:
        return self.covered_s >= (self.window.until - self.window.since).total_seconds()

    @property
    def bytes_per_s(self) -> float:
        """The bytes read over the time they could have been read in: a history minutes old is not averaged
        over a day (83.7 MB in 12 minutes is 116 kB/s, not 969 B/s)."""
        return self.total.bytes / self.covered_s if self.covered_s > 0 else 0.0

    @property
    def efficiency(self) -> float | None:
        return self.total.reading_s / self.total.mounted_s if self.total.mounted_s > 0 else None

    @property
    def files_per_mount(self) -> float | None:
        return self.total.files_of_mounts / self.total.mounts if self.total.mounts else None


@dataclass(frozen=True, slots=True)
class BufferPanel:
    """The disk buffer now: what is on it, pinned, reserved for reads in flight, and the room left."""

    limits: BufferLimits
    usage: BufferUsage
    files_on_disk: int
    smallest_queued: int | None  # bytes of the smallest queued file (None: nothing queued)

    @property
    def free(self) -> int:
        """Below the high watermark, without evicting anything."""
        return free_bytes(self.limits, self.usage)

    @property
    def room(self) -> int:
        """What may be handed to the library now, counting what eviction of unpinned files frees."""
        return admissible_bytes(self.limits, self.usage)

    @property
    def full(self) -> bool:
        """Queued work waits for space (buffer_full): not even the smallest queued file fits."""
        return self.smallest_queued is not None and self.room < self.smallest_queued

    def share(self, size: int) -> float:
        return size / self.limits.capacity_bytes


@dataclass(frozen=True, slots=True)
class Dashboard:
    site: str
    now: datetime
    groups: list[GroupQueue]
    totals: dict[FileState, int]
    tapes_with_work: int
    busiest_tapes: list[TapeWork]
    library: Library
    throughput: Throughput
    policy_changes: list[PolicyChange]
    states: tuple[FileState, ...] = field(default=STATES)
    buffer: BufferPanel | None = None  # None: the buffer is off
    # what operators hold back: the latest tapes disabled or broken (and how many in all), the drives down
    held_tapes: list[TapeStatus] = field(default_factory=list)
    held_tapes_total: int = 0
    drives_down: list[DriveStatus] = field(default_factory=list)
    # files of libraries the settings no longer name: shown apart, not as the running libraries' work (their
    # drives would look idle beside it, the site stuck rather than misconfigured)
    stranded: list[StrandedWork] = field(default_factory=list)

    @property
    def queued_total(self) -> int:
        return sum(self.totals.values())

    @property
    def waiting_total(self) -> int:
        """Files the running libraries have to read, unresolved or queued: a removed library's apart."""
        waiting = sum(n for state, n in self.totals.items() if state in FILE_WAITING)
        return waiting - sum(s.queued for s in self.stranded)

    @property
    def in_flight_total(self) -> int:
        """Files claimed by the running libraries or with them."""
        flying = sum(n for state, n in self.totals.items() if state in FILE_IN_FLIGHT)
        return flying - sum(s.in_flight for s in self.stranded)

    @property
    def stranded_files(self) -> int:
        return sum(s.files for s in self.stranded)

    @property
    def several_libraries(self) -> bool:
        """A site of several libraries: tapes and drives are shown with their library (the same ID, or name,
        in two is two)."""
        return bool(self.library.libraries)

    def mounted(self, tape: TapeWork) -> bool:
        """The tape is mounted in its own library (the same ID mounted in another library is another tape)."""
        for name, one in self.library.libraries:
            if name == tape.library:
                return tape.tape in one.mounted_tapes
        return not self.library.libraries and tape.tape in self.library.mounted_tapes


def _groups(cells: list[QueueCell]) -> list[GroupQueue]:
    by_group: dict[str, list[QueueCell]] = {}
    for cell in cells:
        by_group.setdefault(cell.group, []).append(cell)
    out: list[GroupQueue] = []
    for group, own in sorted(by_group.items()):
        waiting = [c.oldest for c in own if c.state in FILE_WAITING]
        out.append(
            GroupQueue(
                group=group,
                files={c.state: c.files for c in own},
                bytes=sum(c.bytes for c in own),
                oldest_waiting=min(waiting) if waiting else None,
            )
        )
    return out


def library_now(adapter: HsmAdapter) -> Library:
    """The adapter's health and capacity, asked now; an adapter that fails is shown, not hidden."""
    try:
        health = adapter.health()
        capacity = adapter.capacity()
    except Exception as exc:
        return Library("unknown", None, None, (), problem=f"the library did not answer: {exc}")
    busy = capacity.drives_total - capacity.drives_free
    several = isinstance(adapter, Site) and len(adapter.libraries) > 1
    # a site of one library (the settings name it) is described as that library, named as the banner names it
    named = next(iter(adapter.libraries.items())) if isinstance(adapter, Site) and not several else None
    describe = getattr(named[1] if named else adapter, "describe", None)  # optional: not in the protocol
    description = str(describe()) if callable(describe) else None
    if named is not None and description is not None:
        description = f"{named[0]}: {description}"
    each = adapter.libraries.items() if isinstance(adapter, Site) and several else ()
    return Library(
        health.value,
        capacity.drives_total,
        busy,
        tuple(sorted(capacity.mounted_tapes)),
        None,
        description,
        tuple((name, library_now(one)) for name, one in each),
    )


def throughput(session: Session, now: datetime, costs: LibraryCosts | None) -> Throughput:
    window = make_window(now - RECENT, now, Bucket.HOUR, now)
    drives = totals_by_key(tally(session, window, now, "drive"))
    total = Tally()
    for one in drives.values():
        total.add(one)
    transfer = total.bytes / costs.rate_bytes_per_s if costs is not None else None
    keys = sorted(drives, key=split_drive_key)
    lines = [DriveLine(*split_drive_key(key), drives[key]) for key in keys]
    began = history_began(session)
    return Throughput(window=window, total=total, drives=lines, transfer_s=transfer, covered_since=began)


def buffer_panel(
    session: Session, limits: BufferLimits, now: datetime, libraries: Collection[str]
) -> BufferPanel:
    """`libraries`: the site's, whose files in flight reserve room (as the cycle counts them)."""
    return BufferPanel(
        limits=limits,
        usage=buffer_queries.usage(session, epoch_s(now), libraries),
        files_on_disk=buffer_queries.files_on_disk(session),
        smallest_queued=buffer_queries.smallest_queued_bytes(session, libraries),
    )


def build_dashboard(
    session: Session,
    adapter: HsmAdapter,
    now: datetime,
    costs: LibraryCosts | None,
    *,
    site: str,
    buffer: BufferLimits | None = None,
) -> Dashboard:
    # the libraries the service runs (a site's, as the settings name them, else `default`): files whose row
    # names another wait for a library the settings no longer name
    libraries = tuple(site_adapters(adapter))
    cells = queue_by_state_and_group(session)
    totals = {state: sum(c.files for c in cells if c.state is state) for state in STATES}
    held, held_total = held_tape_statuses(session, HELD_TAPES_SHOWN)
    return Dashboard(
        site=site,
        now=now,
        groups=_groups(cells),
        totals=totals,
        tapes_with_work=count_tapes_with_work(session, libraries),
        busiest_tapes=busiest_tapes(session, TAPES_SHOWN, libraries),
        library=library_now(adapter),
        throughput=throughput(session, now, costs),
        policy_changes=recent_policy_changes(session, POLICY_CHANGES_SHOWN),
        buffer=buffer_panel(session, buffer, now, libraries) if buffer is not None else None,
        held_tapes=held,
        held_tapes_total=held_total,
        drives_down=drives_down(session),
        stranded=waiting_outside(session, libraries),
    )
