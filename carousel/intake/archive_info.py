"""Archive info: where each file's copies are. Never fails as a whole: a path that is malformed, over the
per-call limit, or unknown to the library gets its own error; the others their locality. A file whose every
tape copy is on a broken tape is LOST (docs/api.md, "Archive info"): no stage of it can be read. A file no
library of the site has, queued or in flight for one the settings no longer name, gets that library's words
as its error (a stage of it joins that wait)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.db.media_queries import broken_tapes
from carousel.domain.errors import InvalidInput
from carousel.domain.grants import UNRESTRICTED, Grants, require_some_poll_scope
from carousel.domain.libraries import DEFAULT_LIBRARY, not_in_settings_words
from carousel.intake.access import NOT_COVERED
from carousel.intake.model import ArchiveInfo, Locality
from carousel.intake.paths import normalise_path
from hsm_adapters.base import HsmAdapter, LookupResult, NotOnTape, OnTape, Unknown
from hsm_adapters.site import site_adapters

log = logging.getLogger(__name__)


def _locality(result: LookupResult, staged_here: bool, *, buffer_on: bool, broken: bool) -> ArchiveInfo:
    """With the disk buffer on, a file is on disk here exactly when its bytes are in the buffer: a copy the
    library keeps on its own disk is not one clients can read from carousel. `broken`: the lookup's copy is
    on a broken tape, which it chooses only when every copy is (hsm_adapters.site): no tape copy is read."""
    match result:
        case OnTape(path=path, on_disk=on_disk):
            both = staged_here or (on_disk and not buffer_on)
            if broken:
                return ArchiveInfo(path, Locality.DISK if both else Locality.LOST)
            return ArchiveInfo(path, Locality.DISK_AND_TAPE if both else Locality.TAPE)
        case NotOnTape(path=path, reason=reason, on_disk=on_disk):
            return ArchiveInfo(path, Locality.DISK) if on_disk else ArchiveInfo(path, error=reason)
        case Unknown(path=path):
            return ArchiveInfo(path, Locality.UNAVAILABLE)


def archive_info(
    session: Session,
    adapter: HsmAdapter,
    raw_paths: Sequence[str],
    *,
    max_paths: int,
    max_path_bytes: int,
    grants: Grants = UNRESTRICTED,
    buffer_on: bool = False,
) -> list[ArchiveInfo]:
    """One entry per path given, in order, each naming the path as the client wrote it. A path the
    caller's credential does not cover gets an error, and the library is not asked about it."""
    require_some_poll_scope(grants, "archive info")
    normalised: dict[int, str] = {}
    answers: dict[int, ArchiveInfo] = {}
    for index, raw in enumerate(raw_paths):
        if index >= max_paths:
            answers[index] = ArchiveInfo(raw, error=f"over the limit of {max_paths} paths per call")
            continue
        try:
            path = normalise_path(raw, max_bytes=max_path_bytes)
        except InvalidInput as exc:
            answers[index] = ArchiveInfo(raw, error=exc.detail)
            continue
        if grants.may_poll(path):
            normalised[index] = path
        else:
            answers[index] = ArchiveInfo(raw, error=NOT_COVERED)

    unique = list(dict.fromkeys(normalised.values()))
    by_path: dict[str, ArchiveInfo] = {}
    if unique:
        try:
            results = adapter.lookup(unique)
        except Exception as exc:
            log.warning("archive info lookup of %d paths failed: %s", len(unique), exc)
            results = [Unknown(path, str(exc)) for path in unique]
        staged = q.disk_copies(session, unique)
        broken = set(broken_tapes(session)) if any(isinstance(r, OnTape) for r in results) else set()
        by_path = {
            result.path: _locality(
                result, result.path in staged, buffer_on=buffer_on, broken=_on_broken_tape(result, broken)
            )
            for result in results
        }
        # a path no library of the site has may still wait in one the settings no longer name: a stage of it
        # joins that wait, so say so rather than that it is in no library
        absent = [path for path, info in by_path.items() if info.error is not None]
        if absent:
            stranded = q.waiting_outside_of(session, absent, site_adapters(adapter))
            by_path.update(
                {p: ArchiveInfo(p, error=not_in_settings_words(lib)) for p, lib in stranded.items()}
            )

    entries = []
    for index, raw in enumerate(raw_paths):
        if index in answers:
            entries.append(answers[index])
            continue
        found = by_path.get(normalised[index])
        if found is None:
            entries.append(ArchiveInfo(raw, Locality.UNAVAILABLE))
        else:
            entries.append(ArchiveInfo(raw, found.locality, found.error))
    return entries


def _on_broken_tape(result: LookupResult, broken: set[tuple[str, str]]) -> bool:
    """The lookup's copy is on a broken tape (a plain adapter's copy is the library `default`'s)."""
    return isinstance(result, OnTape) and (result.library or DEFAULT_LIBRARY, result.tape) in broken
