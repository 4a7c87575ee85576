"""What the service lets one caller do, told to clients: in the discovery document's metadata and at
GET /api/native/v1/limits (with the caller's own standing). Quotas that are off are left out."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from carousel.api.context import Context, CurrentCaller, DbSession
from carousel.api.problems import PROBLEM_JSON
from carousel.config import Settings
from carousel.intake import quota as quota_case
from carousel.intake.quota import QueueQuota

router = APIRouter(
    prefix="/api/native/v1",
    tags=["native"],
    responses={
        code: {"description": description, "content": {PROBLEM_JSON: {}}}
        for code, description in (
            (401, "No valid credentials (WWW-Authenticate says why)"),
            (429, "Over the call rate (Retry-After says when to come back)"),
        )
    },
)


def queue_quota(settings: Settings) -> QueueQuota:
    quotas = settings.quotas
    return QueueQuota(
        per_caller=quotas.max_queued_files_per_caller,
        per_group=quotas.max_queued_files_per_group,
        retry_after_s=quotas.queue_full_retry_after_s,
    )


def advertised_limits(settings: Settings) -> dict[str, Any]:
    """The discovery document's `metadata`: the Tape REST names the standard leaves to each site."""
    limits, quotas = settings.limits, settings.quotas
    advertised: dict[str, Any] = {
        "maxFilesPerStageRequest": limits.max_files_per_request_tape_rest,
        "maxPathsPerArchiveInfoRequest": limits.max_archiveinfo_paths,
        "maxBodyBytes": limits.max_body_bytes,
    }
    optional = {
        "maxQueuedFilesPerCaller": quotas.max_queued_files_per_caller,
        "maxQueuedFilesPerGroup": quotas.max_queued_files_per_group,
        "callerRequestsPerSecond": quotas.caller_calls_per_s,
        "callerBurst": quotas.caller_burst if quotas.caller_calls_per_s else None,
        "groupRequestsPerSecond": quotas.group_calls_per_s,
        "groupBurst": quotas.group_burst if quotas.group_calls_per_s else None,
    }
    advertised.update({key: value for key, value in optional.items() if value is not None})
    return advertised


class CallerStanding(BaseModel):
    name: str
    groups: list[str]
    admin: bool
    queued_files: int = Field(description="files of the caller's requests not yet ended")
    group: str | None = Field(
        description="the caller's default group; null for a caller without a group (no group quota bounds it)"
    )
    group_queued_files: int | None


class LimitsOut(BaseModel):
    limits: dict[str, Any] = Field(description="null: no such limit")
    caller: CallerStanding


@router.get("/limits", response_model=LimitsOut)
def limits(context: Context, session: DbSession, caller: CurrentCaller) -> LimitsOut:
    """The limits and quotas in force, and how much of its queue quotas the caller uses now."""
    settings = context.settings
    quotas = settings.quotas
    used = quota_case.usage(session, caller)
    return LimitsOut(
        limits={
            **settings.limits.model_dump(),
            "max_queued_files_per_caller": quotas.max_queued_files_per_caller,
            "max_queued_files_per_group": quotas.max_queued_files_per_group,
            "caller_calls_per_s": quotas.caller_calls_per_s,
            "caller_burst": quotas.caller_burst,
            "group_calls_per_s": quotas.group_calls_per_s,
            "group_burst": quotas.group_burst,
        },
        caller=CallerStanding(
            name=caller.name,
            groups=list(caller.groups),
            admin=caller.grants.admin,
            queued_files=used.caller_queued,
            group=used.group,
            group_queued_files=used.group_queued,
        ),
    )
