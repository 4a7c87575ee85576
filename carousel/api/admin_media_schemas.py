"""Bodies of the admin API's tapes and drives (docs/admin.md, "Tapes and drives"). Strict: an unknown field is
refused."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from carousel.api.text_fields import OneLine
from carousel.domain.media import (
    MAX_MEDIA_REASON_LENGTH,
    DownMode,
    DriveState,
    DriveStatus,
    MediaAuditEntry,
    TapeState,
    TapeStatus,
)
from carousel.media_admin.audit import MediaAuditPage
from carousel.media_admin.tapes import TapeView


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Reason = Field(
    min_length=1, max_length=MAX_MEDIA_REASON_LENGTH, description="why, one line: kept in the audit trail"
)


class TapeStateIn(_Strict):
    state: TapeState = Field(
        description="disabled: its files wait and nothing mounts it; broken: its queued files fail with the "
        "reason; active: planned as usual again"
    )
    reason: OneLine = Reason


class DriveStateIn(_Strict):
    state: DriveState
    mode: DownMode | None = Field(
        default=None,
        description="taking it down: after_mount (the default: it finishes its current mount) or now (the "
        "read in progress goes back to the library's queue); none when bringing it up",
    )
    reason: OneLine = Reason


class TapeOut(BaseModel):
    library: str = Field(description="the library holding it: the same tape ID in two libraries is two tapes")
    tape: str
    state: TapeState
    reason: str | None
    changed_at: datetime | None
    changed_by: str | None
    failed_mounts: int = Field(description="mounts the library reported failed in a row")

    @classmethod
    def of(cls, status: TapeStatus) -> TapeOut:
        return cls(
            library=status.library,
            tape=status.tape,
            state=status.state,
            reason=status.reason,
            changed_at=status.changed_at,
            changed_by=status.changed_by,
            failed_mounts=status.failed_mounts,
        )


class TapeDetailOut(TapeOut):
    files: dict[str, int] = Field(description="the service's files on this tape, by state")

    @classmethod
    def of_view(cls, view: TapeView) -> TapeDetailOut:
        return cls(**TapeOut.of(view.status).model_dump(), files=view.files)


class TapeListOut(BaseModel):
    tapes: list[TapeOut] = Field(description="tapes whose state was ever set or whose mounts failed")


class DriveOut(BaseModel):
    library: str = Field(description="the library the drive is in")
    drive: str
    state: DriveState
    mode: DownMode | None
    reason: str | None
    changed_at: datetime | None
    changed_by: str | None

    @classmethod
    def of(cls, status: DriveStatus) -> DriveOut:
        return cls(
            library=status.library,
            drive=status.drive,
            state=status.state,
            mode=status.mode,
            reason=status.reason,
            changed_at=status.changed_at,
            changed_by=status.changed_by,
        )


class DriveListOut(BaseModel):
    drives: list[DriveOut]


class MediaAuditOut(BaseModel):
    id: int
    at: datetime
    who: str = Field(description="the admin, or `service` for a tape the library's failed mounts broke")
    kind: str
    library: str
    name: str
    old_state: str
    new_state: str
    reason: str

    @classmethod
    def of(cls, entry: MediaAuditEntry) -> MediaAuditOut:
        return cls(
            id=entry.id,
            at=entry.at,
            who=entry.who,
            kind=entry.kind.value,
            library=entry.library,
            name=entry.name,
            old_state=entry.old_state,
            new_state=entry.new_state,
            reason=entry.reason,
        )


class TapeChangeOut(BaseModel):
    tape: TapeOut
    audit: MediaAuditOut


class DriveChangeOut(BaseModel):
    drive: DriveOut
    audit: MediaAuditOut


class MediaAuditPageOut(BaseModel):
    entries: list[MediaAuditOut]
    next_cursor: str | None = Field(description="pass as `cursor` for older entries; null on the last page")

    @classmethod
    def of(cls, page: MediaAuditPage) -> MediaAuditPageOut:
        return cls(entries=[MediaAuditOut.of(e) for e in page.entries], next_cursor=page.next_cursor)
