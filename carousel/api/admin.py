"""The admin API (`/api/admin/v1`, the admin role only): the active scheduling policy, read and changed at
run time, its audit trail, and dry runs of a candidate policy (docs/admin.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from carousel.api.admin_schemas import (
    AuditEntryOut,
    AuditPageOut,
    CandidateIn,
    ChoiceOut,
    DryRunOut,
    HistoryReplayIn,
    HistoryReplayOut,
    LibraryDryRunOut,
    PassOut,
    PolicyChangeOut,
    PolicyIn,
    PolicyOut,
    ProjectionOut,
    SelectionOut,
    WaitingOut,
)
from carousel.api.auth import AdminCaller, require_admin
from carousel.api.context import AppContext, Context, DbSession, DbSlot
from carousel.api.problems import PROBLEM_JSON
from carousel.config import library_time_scale
from carousel.config.libraries import libraries_of
from carousel.db.engine import transaction
from carousel.domain.errors import Conflict
from carousel.domain.policy_choice import PolicyChoice
from carousel.outlook.reasons import classify
from carousel.outlook.site import SiteProjection
from carousel.policy_admin import changes
from carousel.policy_admin.dry_run import DryRun, dry_run
from carousel.policy_admin.history_replay import replay_history
from policies.registry import available_policies

PREFIX = "/api/admin/v1"

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"description": description, "content": {PROBLEM_JSON: {}}}
    for code, description in (
        (400, "Invalid input: problem+json naming the field (a policy that does not build from its options)"),
        (401, "No valid credentials"),
        (403, "The caller does not have the admin role"),
        (409, "expected_version is not the active version: someone changed the policy meanwhile"),
    )
}

router = APIRouter(prefix=PREFIX, tags=["admin"], responses=_PROBLEMS, dependencies=[Depends(require_admin)])


@router.get("/policy", response_model=PolicyOut)
def get_policy(context: Context, session: DbSession) -> PolicyOut:
    """The policy the next cycle plans with, and its version."""
    return PolicyOut.of_active(changes.active_settings(session, context.settings), available_policies())


@router.put("/policy", response_model=PolicyChangeOut)
def put_policy(body: PolicyIn, context: Context, session: DbSession, caller: AdminCaller) -> PolicyChangeOut:
    """Make a policy (with its options) the active one from the next cycle on. It is built first: options
    it refuses are a 400 naming the field, and nothing changes. Every change is in the audit trail."""
    done = changes.change_policy(
        session,
        context.settings,
        context.clock,
        who=caller.name,
        choice=body.choice(),
        reason=body.reason,
        expected_version=body.expected_version,
    )
    return PolicyChangeOut(
        active=PolicyOut.of_active(done.active, available_policies()),
        changed=done.entry is not None,
        audit=AuditEntryOut.of(done.entry) if done.entry is not None else None,
    )


@router.get("/policy/audit", response_model=AuditPageOut)
def get_audit(
    session: DbSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=32)] = None,
) -> AuditPageOut:
    """Every change of the policy, newest first: who, when, old, new, why."""
    page = changes.audit_trail(session, limit=limit, cursor=cursor)
    return AuditPageOut(entries=[AuditEntryOut.of(e) for e in page.entries], next_cursor=page.next_cursor)


SHOWN = 500  # tapes and passes listed in a dry run; the totals count them all


def _projection_out(choice: PolicyChoice, site: SiteProjection) -> ProjectionOut:
    """The site's projection (each library's tapes named with their library), or one library's."""
    libraries = site.libraries.items()
    passes = sorted(
        ((name, p) for name, own in libraries for p in own.passes),
        key=lambda e: (e[1].reads_from, e[1].tape, e[0]),
    )
    waiting = sorted(
        (tape, name, reason) for name, own in libraries for tape, reason in own.plan.waiting.items()
    )
    return ProjectionOut(
        policy=ChoiceOut.of(choice),
        selections=[
            SelectionOut(tape=s.tape, max_files=s.max_files, group=s.group, library=name)
            for name, own in libraries
            for s in own.plan.selections
        ],
        waiting=[
            WaitingOut(tape=tape, code=classify(reason).value, reason=reason, library=name)
            for tape, name, reason in waiting[:SHOWN]
        ],
        waiting_total=len(waiting),
        passes=[
            PassOut(
                tape=p.tape,
                plan=p.plan,
                files=p.files,
                bytes=p.bytes,
                reads_from=p.reads_from,
                done_at=p.done_at,
                joined=p.joined,
                library=name,
            )
            for name, p in passes[:SHOWN]
        ],
        passes_total=len(passes),
        plans=site.plans,
        complete=site.complete,
        drained_at=site.drained_at,
        note=site.note,
    )


def _library_out(done: DryRun, name: str) -> LibraryDryRunOut:
    candidate, active = done.under_candidate.libraries[name], done.under_active.libraries[name]
    return LibraryDryRunOut(
        library=name,
        tapes_with_work=len(candidate.tapes),
        candidate=_projection_out(done.candidate, SiteProjection(candidate.now, {name: candidate})),
        active=_projection_out(done.active, SiteProjection(active.now, {name: active})),
    )


def _candidate(body: CandidateIn, active: PolicyChoice) -> PolicyChoice:
    """The policy a body names; omitted, the active one. Options omitted: the active one's for the active
    policy, none for another."""
    return PolicyChoice(
        body.policy or active.policy,
        body.options
        if body.options is not None
        else (active.options if body.policy in (None, active.policy) else {}),
    )


def _active_choice(context: AppContext) -> PolicyChoice:
    """The active policy, read in a transaction of its own: the dry run and replay open theirs after it."""
    with transaction(context.session_factory) as session:
        return changes.active_settings(session, context.settings).choice


@router.post("/policy/dry-run", response_model=DryRunOut)
def post_dry_run(body: CandidateIn, context: Context, _slot: DbSlot) -> DryRunOut:
    """What the next cycles would do under a candidate policy (default: the active one) on the live queue,
    next to the active policy, without dispatching anything. 400 naming the field if it does not build."""
    active = _active_choice(context)
    candidate = _candidate(body, active)
    done = dry_run(
        context.settings,
        context.session_factory,
        context.adapter,
        context.clock,
        candidate=candidate,
        active=active,
    )
    return DryRunOut(
        now=done.under_candidate.now,
        tapes_with_work=done.under_candidate.tapes,
        candidate=_projection_out(done.candidate, done.under_candidate),
        active=_projection_out(done.active, done.under_active),
        libraries=[_library_out(done, name) for name in done.under_candidate.libraries],
    )


@router.post("/policy/replay", response_model=HistoryReplayOut)
def post_history_replay(body: HistoryReplayIn, context: Context, _slot: DbSlot) -> HistoryReplayOut:
    """The requests of the last `hours` replayed through the simulator under a candidate policy (default:
    the active one), beside what happened and the active policy's replay of them. Runs for seconds to a
    minute (limits.max_replay_files). 400 naming the field: a policy that does not build, a window over the
    limit, a library the settings do not describe (give `profile` and `drives`). 409: a site of several
    libraries (the replay runs one)."""
    libraries = libraries_of(context.settings)
    if len(libraries) > 1:
        raise Conflict(
            f"the history replay runs one library, and this site has {len(libraries)}"
            f" ({', '.join(libraries)}): replay a site with carousel simulate --libraries"
        )
    active = _active_choice(context)
    done = replay_history(
        context.session_factory,
        context.settings,
        context.clock,
        candidate=_candidate(body, active),
        active=active,
        hours=body.hours,
        profile=body.profile,
        drives=body.drives,
        time_scale=library_time_scale(context.settings),
    )
    return HistoryReplayOut.of(done)
