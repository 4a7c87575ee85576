"""The admin API's tapes and drives (`/api/admin/v1/tapes`, `/drives`, `/media/audit`; the admin role only):
a tape disabled, broken or active again, a drive down or up, each with a reason and audited (docs/admin.md,
"Tapes and drives"). A change is in effect at the scheduler's next cycle."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from carousel.api.admin import PREFIX
from carousel.api.admin_media_schemas import (
    DriveChangeOut,
    DriveListOut,
    DriveOut,
    DriveStateIn,
    MediaAuditOut,
    MediaAuditPageOut,
    TapeChangeOut,
    TapeDetailOut,
    TapeListOut,
    TapeOut,
    TapeStateIn,
)
from carousel.api.auth import AdminCaller, require_admin
from carousel.api.context import Context, DbSession
from carousel.api.problems import PROBLEM_JSON
from carousel.domain.media import MediaKind
from carousel.media_admin import audit, drives, tapes

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"description": description, "content": {PROBLEM_JSON: {}}}
    for code, description in (
        (400, "Invalid input: problem+json naming the field (a state, a mode, a reason, a name)"),
        (401, "No valid credentials"),
        (403, "The caller does not have the admin role"),
        (404, "No such library, tape or drive (field `library`, `tape` or `drive`)"),
        (409, "The tape or drive is in that state already (field `state`): nothing changed"),
    )
}

router = APIRouter(prefix=PREFIX, tags=["admin"], responses=_PROBLEMS, dependencies=[Depends(require_admin)])


# A tape is (library, tape) and a drive (library, drive): `library` may be left out when the name is in one
# library only (docs/admin.md, "Tapes and drives").
LibraryParam = Annotated[
    str | None,
    Query(
        max_length=64,
        description="the library holding the tape or drive; needed when the name is in several libraries",
    ),
]


@router.get("/tapes", response_model=TapeListOut)
def get_tapes(context: Context, session: DbSession, library: LibraryParam = None) -> TapeListOut:
    """Tapes whose state was ever set, or whose mounts failed (`library`: its own); every other tape is
    active."""
    return TapeListOut(tapes=[TapeOut.of(s) for s in tapes.list_tapes(session, context.adapter, library)])


@router.get("/tapes/{tape}", response_model=TapeDetailOut)
def get_tape(tape: str, context: Context, session: DbSession, library: LibraryParam = None) -> TapeDetailOut:
    """One tape: its state, why, who set it, and the service's files on it by state. 404 for a tape neither
    the queue nor the library knows."""
    return TapeDetailOut.of_view(tapes.show_tape(session, context.adapter, tape, library))


@router.put("/tapes/{tape}/state", response_model=TapeChangeOut)
def put_tape_state(
    tape: str,
    body: TapeStateIn,
    context: Context,
    session: DbSession,
    caller: AdminCaller,
    *,
    library: LibraryParam = None,
) -> TapeChangeOut:
    """Disable a tape (its files wait, nothing mounts it), break it (its queued files fail with the reason)
    or make it active again (its waiting files are planned again). 409 when it is in that state already."""
    done = tapes.change_tape(
        session,
        context.adapter,
        context.clock,
        tape=tape,
        state=body.state,
        reason=body.reason,
        who=caller.name,
        library=library,
    )
    return TapeChangeOut(tape=TapeOut.of(done.status), audit=MediaAuditOut.of(done.audit))


@router.get("/drives", response_model=DriveListOut)
def get_drives(context: Context, session: DbSession, library: LibraryParam = None) -> DriveListOut:
    """Every library's drives (`library`: its own) as admins want them (up unless taken down)."""
    listed = drives.list_drives(session, context.adapter, library)
    return DriveListOut(drives=[DriveOut.of(s) for s in listed])


@router.put("/drives/{drive}/state", response_model=DriveChangeOut)
def put_drive_state(
    drive: str,
    body: DriveStateIn,
    context: Context,
    session: DbSession,
    caller: AdminCaller,
    *,
    library: LibraryParam = None,
) -> DriveChangeOut:
    """Take a drive down (after its current mount, or now) or bring it up. The scheduler's leader hands the
    change to the library at its next cycle. 409 when it is in that state already."""
    done = drives.change_drive(
        session,
        context.adapter,
        context.clock,
        drive=drive,
        state=body.state,
        mode=body.mode,
        reason=body.reason,
        who=caller.name,
        library=library,
    )
    return DriveChangeOut(drive=DriveOut.of(done.status), audit=MediaAuditOut.of(done.audit))


@router.get("/media/audit", response_model=MediaAuditPageOut)
def get_media_audit(
    context: Context,
    session: DbSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=32)] = None,
    kind: MediaKind | None = None,
    *,
    library: LibraryParam = None,
) -> MediaAuditPageOut:
    """Every change of a tape's or drive's state, newest first (`library`: its tapes' and drives')."""
    page = audit.media_audit(
        session, limit=limit, cursor=cursor, kind=kind, library=library, adapter=context.adapter
    )
    return MediaAuditPageOut.of(page)
