"""Bodies of the admin API (policy administration). Strict: an unknown field is refused."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from carousel.api.text_fields import FreeText, OneLine, storable_json
from carousel.domain.policy_choice import AuditEntry, PolicyChoice
from carousel.domain.policy_diff import differences
from carousel.policy_admin.changes import MAX_REASON_LENGTH
from carousel.policy_admin.history_replay import MAX_HOURS, HistoryReplay, Outcome
from carousel.policy_admin.model import ActivePolicySettings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# A policy's options end in the audit trail (JSON in the database): every key and string must be storable.
Options = Annotated[dict[str, Any], AfterValidator(storable_json)]


class PolicyIn(_Strict):
    policy: OneLine = Field(
        min_length=1, max_length=64, description="a policy name (GET shows those available)"
    )
    options: Options = Field(
        default_factory=dict,
        description="the policy's options, fair_share (weights, quotas) among them; docs/policies.md",
    )
    reason: FreeText = Field(max_length=MAX_REASON_LENGTH, description="why: kept in the audit trail")
    expected_version: int | None = Field(
        default=None, ge=0, description="refuse (409) unless the active policy is still at this version"
    )

    def choice(self) -> PolicyChoice:
        return PolicyChoice(self.policy, self.options)


class CandidateIn(_Strict):
    """A policy to try; omitted: the active one."""

    policy: Annotated[OneLine, Field(min_length=1, max_length=64)] | None = None
    options: Options | None = None


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
    library: str = Field(default="default", description="the library whose plan it is")


class WaitingOut(BaseModel):
    tape: str
    code: str = Field(description="why, as a word: carousel.outlook.reasons.WaitCode (docs/admin.md)")
    reason: str = Field(description="why, in the policy's words")
    library: str = Field(default="default", description="the library of the tape (a tape is (library, tape))")


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
    library: str = Field(default="default", description="the library of the tape and its drive")


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


class LibraryDryRunOut(BaseModel):
    library: str
    tapes_with_work: int
    candidate: ProjectionOut = Field(description="this library's projection under the candidate")
    active: ProjectionOut


class DryRunOut(BaseModel):
    now: datetime
    tapes_with_work: int = Field(description="every library's, a tape ID in two libraries counted twice")
    candidate: ProjectionOut = Field(description="the site's: every library's plans, passes and totals")
    active: ProjectionOut
    libraries: list[LibraryDryRunOut] = Field(
        default_factory=list, description="each library's projections, in the settings' order"
    )


class HistoryReplayIn(CandidateIn):
    """A policy to replay the recorded requests under (omitted: the active one), over the last `hours`."""

    hours: float = Field(default=24.0, gt=0, le=MAX_HOURS, description="the window: requests created since")
    profile: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="drive profile of the library; default: the simulated library's (required otherwise)",
    )
    drives: int | None = Field(
        default=None, ge=1, le=10_000, description="drives of the library; default: the simulated library's"
    )


class LatencyOut(BaseModel):
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    count: int


class OutcomeOut(BaseModel):
    run: str = Field(description="recorded: what happened; replay: the simulator under `policy`")
    policy: str
    files: int = Field(description="files asked for in the window (one per request and path) and replayed")
    staged: int
    failed: int
    waiting: int = Field(description="still waiting at the end of the window (recorded only)")
    reads: int = Field(description="reads from tape that ended on disk")
    bytes: int
    mounts: int
    files_per_mount: float | None
    makespan_s: float | None = Field(description="first arrival to the last end; null while files wait")
    throughput_mb_s: float | None
    latency: LatencyOut = Field(description="arrival to on disk, in clock seconds")

    @classmethod
    def of(cls, outcome: Outcome) -> OutcomeOut:
        throughput = outcome.throughput_bytes_per_s
        per_mount = outcome.files_per_mount
        return cls(
            run=outcome.run,
            policy=outcome.policy,
            files=outcome.files,
            staged=outcome.staged,
            failed=outcome.failed,
            waiting=outcome.waiting,
            reads=outcome.reads,
            bytes=outcome.bytes,
            mounts=outcome.mounts,
            files_per_mount=round(per_mount, 3) if per_mount is not None else None,
            makespan_s=round(outcome.makespan_s, 3) if outcome.makespan_s is not None else None,
            throughput_mb_s=round(throughput / 1e6, 3) if throughput is not None else None,
            latency=LatencyOut(
                p50_s=outcome.latency.p50_s,
                p95_s=outcome.latency.p95_s,
                p99_s=outcome.latency.p99_s,
                count=outcome.latency.count,
            ),
        )


class PolicyChangeInWindowOut(BaseModel):
    at: datetime
    who: str
    old_policy: str
    policy: str
    version: int


class HistoryReplayOut(BaseModel):
    since: datetime
    until: datetime
    time_scale: float = Field(description="library seconds per clock second; figures are in clock seconds")
    library: str
    profile: str
    drives: int
    requests: int
    skipped: dict[str, int] = Field(
        description="files left out of the replay: cancelled, tape_unknown, not_read"
    )
    policy_changes: list[PolicyChangeInWindowOut]
    active: ChoiceOut
    candidate: ChoiceOut
    recorded: OutcomeOut
    under_active: OutcomeOut
    under_candidate: OutcomeOut
    note: str | None

    @classmethod
    def of(cls, done: HistoryReplay) -> HistoryReplayOut:
        return cls(
            since=done.since,
            until=done.until,
            time_scale=done.time_scale,
            library=done.library.described,
            profile=done.library.profile,
            drives=done.library.drives,
            requests=done.requests,
            skipped=done.skipped,
            policy_changes=[
                PolicyChangeInWindowOut(
                    at=c.at, who=c.who, old_policy=c.old_policy, policy=c.policy, version=c.version
                )
                for c in done.policy_changes
            ],
            active=ChoiceOut.of(done.active),
            candidate=ChoiceOut.of(done.candidate),
            recorded=OutcomeOut.of(done.recorded),
            under_active=OutcomeOut.of(done.under_active),
            under_candidate=OutcomeOut.of(done.under_candidate),
            note=done.note or None,
        )
