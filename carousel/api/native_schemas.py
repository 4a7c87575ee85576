"""Bodies of the native API. Strict: an unknown field is refused (a typo must not pass silently)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from carousel.api.text_fields import OneLine
from carousel.api.webhook_schemas import WebhookIn
from carousel.domain.states import TapeRestState
from carousel.intake.access import ALIAS_MAX_LENGTH, ALIAS_PATTERN, is_request_id
from carousel.intake.activity import ACTIVITY_MAX_LENGTH, ACTIVITY_PATTERN
from carousel.intake.model import FileStatus, RequestInfo
from carousel.outlook.request_outlook import LibraryOutlook, RequestOutlook

# Group names may be WLCG groups, such as "/star/production".
GroupName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:@+/-]+$")]
# FTS's activities have spaces ("Data Consolidation"): one rule for both APIs (carousel.intake.activity).
Activity = Annotated[str, Field(min_length=1, max_length=ACTIVITY_MAX_LENGTH, pattern=ACTIVITY_PATTERN)]
# A request id (a UUID) is refused as an alias, so an alias never shadows an id.
Alias = Annotated[str, Field(min_length=1, max_length=ALIAS_MAX_LENGTH, pattern=ALIAS_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SubmitIn(_Strict):
    paths: list[str] = Field(description="absolute paths; duplicates are staged once")
    priority: int = Field(default=0, ge=-1000, le=1000, description="higher first, within a group's share")
    group: GroupName | None = Field(
        default=None, description="fair-share group; default: the caller's first group"
    )
    activity: Activity = "default"
    alias: Alias | None = Field(
        default=None,
        description="another name for the request, usable wherever the routes take {id} "
        "(XRootD's request id); unique; not a UUID",
    )
    colocation: Annotated[OneLine, Field(max_length=256)] | None = Field(
        default=None, description="a hint: stage the files together, near this path"
    )
    webhook: WebhookIn | None = Field(
        default=None, description="a URL to tell when the request is done (docs/api.md, Webhooks)"
    )
    lifetime: int | str | None = Field(
        default=None,
        description="how long to keep each file on disk once staged: seconds or an ISO 8601 duration "
        "(PT1H, P1D); default and maximum in the settings (buffer.default_lifetime_s, max_lifetime_s)",
    )

    @field_validator("alias")
    @classmethod
    def _alias_is_not_an_id(cls, value: str | None) -> str | None:
        if value is not None and is_request_id(value.lower()):
            raise ValueError("an alias must not have the form of a request id (a UUID)")
        return value


class PathsIn(_Strict):
    paths: list[str] | None = Field(default=None, description="omit for every file of the request")


class SubmitOut(BaseModel):
    id: str
    files_total: int
    webhook_id: str | None = Field(default=None, description="the id of the webhook given, if one was")


class RequestOut(BaseModel):
    id: str
    owner: str
    group: str
    activity: str
    priority: int
    api: str
    state: str
    files_total: int
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    colocation: str | None = None

    @classmethod
    def of(cls, info: RequestInfo) -> RequestOut:
        return cls(
            id=info.id,
            owner=info.owner,
            group=info.group,
            activity=info.activity,
            priority=info.priority,
            api=info.api,
            state=info.state,
            files_total=info.files_total,
            created_at=info.created_at,
            started_at=info.started_at,
            completed_at=info.completed_at,
            colocation=info.colocation,
        )


class OutlookWaitOut(BaseModel):
    code: str = Field(
        description="not_worth_mounting_yet, no_free_drive, group_over_share, library_offline, retry_pending,"
        " buffer_full, tape_unknown, not_projected, library_not_in_settings or waiting (the policy's words"
        " say which)"
    )
    files: int = Field(description="files of the request waiting for this reason")
    reason: str = Field(description="the policy's own words, for the tape holding most of these files")
    library: str | None = Field(default=None, description="the library holding these files")


class LibraryOutlookOut(BaseModel):
    """The request's files in one library, projected on that library's drives and queue."""

    library: str
    position: int | None = Field(description="files of other work this library reads before the first")
    eta: datetime | None = Field(description="when the last of them is expected on disk")
    rough: bool
    reading: int
    next_cycle: int
    unplanned: int

    @classmethod
    def of(cls, entry: LibraryOutlook) -> LibraryOutlookOut:
        own = entry.outlook
        return cls(
            library=entry.library,
            position=own.files_ahead,
            eta=own.eta,
            rough=own.rough,
            reading=own.reading,
            next_cycle=own.next_cycle,
            unplanned=own.unplanned,
        )


class OutlookOut(BaseModel):
    """Where a request stands, from the outlook of the queue (docs/api.md, "Outlook")."""

    computed_at: datetime = Field(description="the queue snapshot the outlook was projected from")
    position: int | None = Field(
        description="files of other work the library is expected to read before the request's first file"
        " (0: one of its tapes is being read or is next); null when none of its files is placed"
    )
    eta: datetime | None = Field(
        description="when its last file is expected on disk; null when none of its files is placed"
    )
    rough: bool = Field(description="some of its tapes lie beyond the projected plans: a rougher estimate")
    reading: int = Field(description="files handed to the library (claimed, mounted or being read)")
    next_cycle: int = Field(description="queued files the next cycle hands to the library")
    unplanned: int = Field(description="pending files the eta does not cover (see waiting)")
    waiting: list[OutlookWaitOut] = Field(description="why its other queued files wait, most files first")
    note: str | None = Field(description="why there is no eta, or what it leaves out")
    libraries: list[LibraryOutlookOut] = Field(
        default_factory=list,
        description="the same figures per library the request has files in (a site of several: docs/api.md)",
    )
    site_libraries: int = Field(
        default=1,
        description="the libraries of the site (more than 1: `libraries` and `waiting` name each library,"
        " even when the request has files in one)",
    )

    @classmethod
    def of(cls, outlook: RequestOutlook) -> OutlookOut:
        return cls(
            computed_at=outlook.computed_at,
            position=outlook.files_ahead,
            eta=outlook.eta,
            rough=outlook.rough,
            reading=outlook.reading,
            next_cycle=outlook.next_cycle,
            unplanned=outlook.unplanned,
            waiting=[
                OutlookWaitOut(code=w.code, files=w.files, reason=w.reason, library=w.library)
                for w in outlook.waiting
            ],
            note=outlook.note,
            libraries=[LibraryOutlookOut.of(entry) for entry in outlook.libraries],
            site_libraries=outlook.site_libraries,
        )


class SummaryOut(BaseModel):
    request: RequestOut
    counts: dict[TapeRestState, int] = Field(description="files of the request in each state")
    outlook: OutlookOut | None = Field(
        default=None,
        description="position, eta and waiting reasons (GET only); null once the request is finished",
    )


class FileOut(BaseModel):
    path: str
    state: TapeRestState | None = Field(
        description="null when the credential's scopes do not cover the path (error says so)"
    )
    on_disk: bool
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None
    checksum: str | None = Field(default=None, description="adler32, 8 hex digits, when known")

    @classmethod
    def of(cls, f: FileStatus) -> FileOut:
        return cls(
            path=f.path,
            state=f.state,
            on_disk=f.on_disk,
            error=f.error,
            started_at=f.started_at,
            finished_at=f.finished_at,
            checksum=f.checksum,
        )


class FilePageOut(BaseModel):
    files: list[FileOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null on the last")


class RequestListOut(BaseModel):
    requests: list[RequestOut]
    next_cursor: str | None
