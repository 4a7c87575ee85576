"""The admin API (`/api/admin/v1`, the admin role only): the active scheduling policy, read and changed at
run time, its audit trail, and dry runs of a candidate policy (docs/admin.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from carousel.api.admin_schemas import AuditEntryOut, AuditPageOut, PolicyChangeOut, PolicyIn, PolicyOut
from carousel.api.auth import AdminCaller, require_admin
from carousel.api.context import Context, DbSession
from carousel.api.problems import PROBLEM_JSON
from carousel.policy_admin import changes
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
