"""Bodies of the admin API (policy administration). Strict: an unknown field is refused."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from carousel.policy_admin.changes import MAX_REASON_LENGTH
from carousel.policy_admin.diff import differences
from carousel.policy_admin.model import ActivePolicySettings, AuditEntry, PolicyChoice


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PolicyIn(_Strict):
    policy: str = Field(min_length=1, max_length=64, description="a policy name (GET shows those available)")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="the policy's options, fair_share (weights, quotas) among them; docs/policies.md",
    )
    reason: str = Field(max_length=MAX_REASON_LENGTH, description="why: kept in the audit trail")
    expected_version: int | None = Field(
        default=None, ge=0, description="refuse (409) unless the active policy is still at this version"
    )

    def choice(self) -> PolicyChoice:
        return PolicyChoice(self.policy, self.options)


class CandidateIn(_Strict):
    """A policy to try; omitted: the active one."""

    policy: str | None = Field(default=None, min_length=1, max_length=64)
    options: dict[str, Any] | None = None


class ChoiceOut(BaseModel):
    policy: str
    options: dict[str, Any]

    @classmethod
    def of(cls, choice: PolicyChoice) -> ChoiceOut:
        return cls(policy=choice.policy, options=dict(choice.options))


class PolicyOut(ChoiceOut):
    version: int = Field(description="0: the settings' policy, nothing changed through administration yet")
    changed_at: datetime | None
    changed_by: str
    available: list[str] = Field(description="policy names this service can build")

    @classmethod
    def of_active(cls, active: ActivePolicySettings, available: list[str]) -> PolicyOut:
        return cls(
            policy=active.choice.policy,
            options=dict(active.choice.options),
            version=active.version,
            changed_at=active.changed_at,
            changed_by=active.changed_by,
            available=available,
        )


class DifferenceOut(BaseModel):
    path: str
    old: str
    new: str


class AuditEntryOut(BaseModel):
    id: int
    at: datetime
    who: str
    reason: str
    version: int
    old: ChoiceOut
    new: ChoiceOut
    changes: list[DifferenceOut]

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditEntryOut:
        return cls(
            id=entry.id,
            at=entry.at,
            who=entry.who,
            reason=entry.reason,
            version=entry.version,
            old=ChoiceOut.of(entry.old),
            new=ChoiceOut.of(entry.new),
            changes=[
                DifferenceOut(path=d.path, old=d.old, new=d.new) for d in differences(entry.old, entry.new)
            ],
        )


class PolicyChangeOut(BaseModel):
    active: PolicyOut
    changed: bool = Field(description="false: the policy given was the active one; nothing was recorded")
    audit: AuditEntryOut | None


class AuditPageOut(BaseModel):
    entries: list[AuditEntryOut]
    next_cursor: str | None = Field(description="pass as `cursor` for older entries; null on the last page")


class SelectionOut(BaseModel):
    tape: str | None
    max_files: int
    group: str | None


class WaitingOut(BaseModel):
    tape: str
    code: str = Field(description="why, as a word: carousel.outlook.reasons.WaitCode (docs/admin.md)")
    reason: str = Field(description="why, in the policy's words")


class PassOut(BaseModel):
    tape: str
    plan: int = Field(
        description="the projected plan that took it: 1 the next cycle's; 0 in flight; -1 rough"
    )
    files: int
    bytes: int
    reads_from: datetime
    done_at: datetime
    joined: bool = Field(description="files joining a pass of the tape already on a drive")


class ProjectionOut(BaseModel):
    policy: ChoiceOut
    selections: list[SelectionOut] = Field(description="the next cycle's plan")
    waiting: list[WaitingOut] = Field(description="tapes the next cycle leaves waiting (at most 500)")
    waiting_total: int
    passes: list[PassOut] = Field(description="the projected passes, in the order they start (at most 500)")
    passes_total: int
    plans: int = Field(description="plans the projection asked the policy for")
    complete: bool = Field(description="every tape was placed by the policy's own plans")
    drained_at: datetime | None = Field(description="when the last file of today's queue would be read")
    note: str | None


class DryRunOut(BaseModel):
    now: datetime
    tapes_with_work: int
    candidate: ProjectionOut
    active: ProjectionOut
