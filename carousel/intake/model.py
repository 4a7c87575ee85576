"""What the intake use cases take and give back: plain immutable values, the same for every API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from carousel.domain.states import TapeRestState


class Api(StrEnum):
    TAPE_REST = "tape_rest"
    NATIVE = "native"
    XROOTD = "xrootd"


@dataclass(frozen=True, slots=True)
class StageOrder:
    """A client's request to bring files to disk, before validation.

    `list_field` names the list in errors ("files"); `path_field` names one path, a format string taking
    its index in the client's list ("files[{}].path")."""

    paths: tuple[str, ...]
    api: Api
    list_field: str
    path_field: str
    priority: int = 0
    group: str | None = None  # None: the caller's default group
    activity: str = "default"
    client_info: str | None = None
    alias: str | None = None  # another name the client will use for the request (XRootD's request id)
    colocation: str | None = None  # a hint: stage these files together, near this path
    # how long each path should stay on disk once staged, as the client gave it (parallel to paths; empty:
    # none given); lifetime_field names one in errors, a format string taking its index
    lifetimes: tuple[object, ...] = ()
    lifetime_field: str = "lifetime"


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    state: TapeRestState
    on_disk: bool
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    checksum: str | None = None  # adler32 (8 hex digits), once the library or the staged bytes gave it


@dataclass(frozen=True, slots=True)
class RequestInfo:
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


@dataclass(frozen=True, slots=True)
class StatusDocument:
    request: RequestInfo
    files_json: str  # a JSON array of {"path", "state", "error"?, "startedAt"?, "finishedAt"?}


@dataclass(frozen=True, slots=True)
class FilePage:
    files: tuple[FileStatus, ...]
    next_cursor: str | None  # None: this was the last page


@dataclass(frozen=True, slots=True)
class RequestSummary:
    request: RequestInfo
    counts: Mapping[TapeRestState, int] = field(default_factory=dict)  # every state, zeros included


@dataclass(frozen=True, slots=True)
class RequestPage:
    requests: tuple[RequestInfo, ...]
    next_cursor: str | None


class Locality(StrEnum):
    """Where a file's copies are, in the WLCG Tape REST API's words."""

    DISK = "DISK"
    TAPE = "TAPE"
    DISK_AND_TAPE = "DISK_AND_TAPE"
    LOST = "LOST"
    NONE = "NONE"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass(frozen=True, slots=True)
class ArchiveInfo:
    """Exactly one of locality and error is set."""

    path: str
    locality: Locality | None = None
    error: str | None = None
