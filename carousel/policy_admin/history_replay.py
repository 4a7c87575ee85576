"""Replay of recorded requests: the last hours' requests run again through the simulator under a candidate
policy, next to what happened and to the active policy's replay of the same requests (docs/admin.md).

The requests created in the window become a trace (carousel.replay.trace): each file a request asked for,
at the request's arrival, with its tape, position and size as the service recorded them, the request's
group and priority. Left out, and counted: files the request cancelled, files whose tape is unknown, and files
no read in the window was for (they were on disk already, so no policy would have read them).

The library is the service's own as far as the settings describe it: for the simulated library its profile,
drives, robots, dismount delay, discipline and queue depth; for another adapter, the profile and drive count
the caller names, set up as `carousel simulate` sets it up for the policy. Replays run without faults, on
the service's clock with the library running `time_scale` times faster than it, as the service's simulated
library does: a policy's times (ages, waits) mean what they mean in the service, and every figure is in clock
seconds, like the recorded ones.

The active policy's replay is the calibration: where it is close to what happened, the candidate's replay
can be trusted as far; where it is not (faults, outages, files read for requests of before the window), the
difference says by how much not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.config.libraries import sole_library
from carousel.db.engine import transaction
from carousel.db.history_queries import (
    AskedFile,
    RecordedMount,
    RecordedRead,
    asked_files,
    mounts_since,
    policy_changes_since,
    reads_since,
)
from carousel.domain.clock import Clock
from carousel.domain.errors import ConfigError, InvalidInput
from carousel.domain.policy_choice import PolicyChoice
from carousel.domain.states import FileState, LinkState
from carousel.policy_admin.validation import built_policy
from carousel.replay.driver import (
    EPOCH,
    ReplayConfig,
    ReplayResult,
    replay,
    replay_library,
    with_service_settings,
)
from carousel.replay.library_setup import LibraryFile
from carousel.replay.trace import Trace, TraceRow, make_trace
from hsm_adapters.simulated.adapter import parse_options
from hsm_adapters.simulated.profiles import load_profile

MAX_HOURS = 24 * 7


@dataclass(frozen=True, slots=True)
class Latency:
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    count: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run made of the window's requests: what happened, or one policy's replay."""

    run: str  # "recorded" or "replay"
    policy: str  # the replayed policy; for "recorded", the policies active in the window
    files: int  # files asked for (one per request and path)
    staged: int
    failed: int
    waiting: int  # still waiting at the end of the window (recorded only)
    reads: int  # reads from tape that ended on disk
    bytes: int
    mounts: int
    makespan_s: float | None  # first arrival to the last file's end; None while files still wait
    latency: Latency  # arrival to on disk, files staged

    @property
    def files_per_mount(self) -> float | None:
        return self.reads / self.mounts if self.mounts else None

    @property
    def throughput_bytes_per_s(self) -> float | None:
        return self.bytes / self.makespan_s if self.makespan_s else None


@dataclass(frozen=True, slots=True)
class LibraryModel:
    profile: str
    drives: int
    setup: LibraryFile | None  # None: the policy's own setup, as `carousel simulate` runs it
    described: str


@dataclass(frozen=True, slots=True)
class PolicyChange:
    at: datetime
    who: str
    old_policy: str
    policy: str
    version: int


@dataclass(frozen=True, slots=True)
class HistoryReplay:
    since: datetime
    until: datetime
    time_scale: float
    library: LibraryModel
    requests: int
    skipped: dict[str, int]  # files left out of the replay, by why
    policy_changes: list[PolicyChange]  # changes of the active policy within the window
    active: PolicyChoice
    candidate: PolicyChoice
    recorded: Outcome
    under_active: Outcome
    under_candidate: Outcome
    note: str = ""
    cycles: dict[str, int] = field(default_factory=dict)


def replay_history(
    session_factory: sessionmaker[Session],
    settings: Settings,
    clock: Clock,
    *,
    candidate: PolicyChoice,
    active: PolicyChoice,
    hours: float = 24.0,
    profile: str | None = None,
    drives: int | None = None,
    time_scale: float = 1.0,
) -> HistoryReplay:
    """InvalidInput naming the field: a candidate that does not build, a window out of range or holding
    more files than limits.max_replay_files, an unknown profile, a library the settings do not describe."""
    if not 0 < hours <= MAX_HOURS:
        raise InvalidInput(f"hours must be more than 0 and at most {MAX_HOURS}, got {hours:g}", field="hours")
    built_policy(candidate)  # refused before any work, naming the field
    library = library_model(settings, profile, drives)
    until = clock.now()
    since = until - timedelta(hours=hours)
    limit = settings.limits.max_replay_files
    with transaction(session_factory) as session:
        asked = asked_files(session, since, until, limit=limit + 1)
        if len(asked) > limit:
            raise InvalidInput(
                f"the last {hours:g} h hold more than limits.max_replay_files = {limit} files: replay a"
                " shorter window",
                field="hours",
            )
        reads = reads_since(session, since)
        replayed, skipped = _replayed(asked, {read.file_id for read in reads})
        tapes = {a.tape for a in replayed if a.tape is not None}
        first = min((a.asked_at for a in replayed), default=until)
        mounts = mounts_since(session, first, tapes)
        changes = [PolicyChange(*change) for change in policy_changes_since(session, since)]
    recorded_policies = _policies_in_window(active.policy, changes)
    recorded = recorded_outcome(replayed, reads, mounts, policy=recorded_policies)
    trace = history_trace(replayed)
    outcomes: dict[str, Outcome] = {}
    cycles: dict[str, int] = {}
    for choice in (active, candidate):
        key = _key(choice)
        if key not in outcomes:
            result = _run(trace, choice, library, settings, time_scale)
            outcomes[key] = replay_outcome(result) if result else _empty("replay", choice.policy)
            cycles[choice.policy] = result.cycles if result else 0
    note = "" if trace.rows else "no file of the window needed a read: nothing to replay"
    return HistoryReplay(
        since=since,
        until=until,
        time_scale=time_scale,
        library=library,
        requests=len({a.request_id for a in asked}),
        skipped=skipped,
        policy_changes=changes,
        active=active,
        candidate=candidate,
        recorded=recorded,
        under_active=outcomes[_key(active)],
        under_candidate=outcomes[_key(candidate)],
        note=note,
        cycles=cycles,
    )


def library_model(settings: Settings, profile: str | None, drives: int | None) -> LibraryModel:
    """The library the replays run on: the settings' simulated library, or the profile and drives named."""
    setup: LibraryFile | None = None
    _, library = sole_library(settings)
    if library.adapter == "simulated":
        options = parse_options(library.adapter_options)
        profile = profile or options.profile
        drives = drives or options.drives
        setup = LibraryFile(
            robots=options.robots,
            dismount_delay_s=options.dismount_delay_s,
            discipline=options.discipline,
            queue_depth=options.queue_depth,
            read_order=options.read_order,
            merge_batches=options.merge_batches,
            new_media_fraction=options.new_media_fraction,
        )
    if profile is None:
        raise InvalidInput(
            f"the {library.adapter} adapter does not say which drives it has: name a drive profile",
            field="profile",
        )
    if drives is None:
        raise InvalidInput(
            f"the {library.adapter} adapter does not say how many drives it has: give drives", field="drives"
        )
    if drives < 1:
        raise InvalidInput(f"drives must be at least 1, got {drives}", field="drives")
    try:
        load_profile(profile)
    except ConfigError as exc:
        raise InvalidInput(str(exc), field="profile") from exc
    where = "the service's simulated library" if setup is not None else "each policy's own library setup"
    return LibraryModel(profile, drives, setup, f"{drives} {profile} drives, {where}")


def history_trace(replayed: Sequence[AskedFile]) -> Trace:
    """The files to replay as a trace, in seconds from the first arrival."""
    if not replayed:
        return make_trace((), "recorded requests")
    first = min(a.asked_at for a in replayed)
    rows = []
    for asked in replayed:
        assert asked.tape is not None and asked.position_bytes is not None and asked.size_bytes is not None
        rows.append(
            TraceRow(
                arrival_s=(asked.asked_at - first).total_seconds(),
                request=asked.request_id,
                path=asked.path,
                size_bytes=asked.size_bytes,
                tape=asked.tape,
                position_bytes=asked.position_bytes,
                group=asked.group,
                priority=asked.priority,
            )
        )
    return make_trace(rows, "recorded requests")


def recorded_outcome(
    replayed: Sequence[AskedFile],
    reads: Sequence[RecordedRead],
    mounts: Sequence[RecordedMount],
    *,
    policy: str,
) -> Outcome:
    """What happened to the replayed files, from the recorded rows."""
    if not replayed:
        return _empty("recorded", policy)
    first = min(a.asked_at for a in replayed)
    files = {a.file_id for a in replayed}
    staged_reads = [r for r in reads if r.file_id in files and r.outcome == FileState.STAGED.value]
    by_outcome = {state: [a for a in replayed if a.outcome == state.value] for state in LinkState}
    ended = by_outcome[LinkState.COMPLETED] + by_outcome[LinkState.FAILED]
    waiting = len(by_outcome[LinkState.PENDING])
    last_end = max((a.finished_at for a in ended if a.finished_at is not None), default=None)
    return Outcome(
        run="recorded",
        policy=policy,
        files=len(replayed),
        staged=len(by_outcome[LinkState.COMPLETED]),
        failed=len(by_outcome[LinkState.FAILED]),
        waiting=waiting,
        reads=len(staged_reads),
        bytes=sum(r.bytes for r in staged_reads),
        mounts=len(mounts),
        makespan_s=(last_end - first).total_seconds() if last_end is not None and not waiting else None,
        latency=latency_of(
            [
                (a.finished_at - a.asked_at).total_seconds()
                for a in by_outcome[LinkState.COMPLETED]
                if a.finished_at is not None
            ]
        ),
    )


def replay_outcome(result: ReplayResult) -> Outcome:
    """A replay's figures."""
    store = result.store
    rows = list(zip(result.trace.rows, store.rows, strict=True))
    staged = [(row, o) for row, o in rows if o.state is FileState.STAGED]
    read = [f for f in store.files if f.state is FileState.STAGED]
    ends = [(o.end - EPOCH).total_seconds() for _, o in rows if o.end is not None]
    latencies = [(o.end - EPOCH).total_seconds() - row.arrival_s for row, o in staged if o.end is not None]
    return Outcome(
        run="replay",
        policy=result.config.policy,
        files=len(rows),
        staged=len(staged),
        failed=sum(1 for _, o in rows if o.state is FileState.FAILED),
        waiting=0,
        reads=len(read),
        bytes=sum(f.size for f in read),
        mounts=len(store.mounts),
        makespan_s=max(ends) if ends else None,
        latency=latency_of(latencies),
    )


def latency_of(values: Sequence[float]) -> Latency:
    if not values:
        return Latency(None, None, None, 0)
    p50, p95, p99 = (round(float(v), 3) for v in np.percentile(np.asarray(values), [50, 95, 99]))
    return Latency(p50, p95, p99, len(values))


def _replayed(asked: Sequence[AskedFile], read_files: set[int]) -> tuple[list[AskedFile], dict[str, int]]:
    """The asked files a replay can run, and how many were left out by why."""
    kept: list[AskedFile] = []
    skipped = {"cancelled": 0, "tape_unknown": 0, "not_read": 0}
    for a in asked:
        if a.outcome == LinkState.CANCELLED.value:
            skipped["cancelled"] += 1
        elif a.tape is None or a.position_bytes is None or a.size_bytes is None:
            skipped["tape_unknown"] += 1
        elif a.file_id not in read_files:
            skipped["not_read"] += 1
        else:
            kept.append(a)
    return kept, skipped


def _run(
    trace: Trace, choice: PolicyChoice, library: LibraryModel, settings: Settings, time_scale: float
) -> ReplayResult | None:
    if not trace.rows:
        return None
    config = with_service_settings(
        ReplayConfig(
            profile=library.profile,
            drives=library.drives,
            policy=choice.policy,
            policy_options=dict(choice.options),
            library=library.setup,
            library_source="the service's simulated library",
            time_scale=time_scale,
        ),
        settings,
    )
    try:
        replay_library(trace, config)
    except ConfigError as exc:  # recorded positions the profile's cartridges cannot hold
        raise InvalidInput(f"the recorded files do not fit this library: {exc}", field="profile") from exc
    try:
        return replay(trace, config)
    except ConfigError as exc:  # a policy that never mounts what waits: the replay says it is stuck
        raise InvalidInput(f"the replay under {choice.policy} failed: {exc}", field="policy") from exc


def _policies_in_window(active: str, changes: Sequence[PolicyChange]) -> str:
    """The policies that planned during the window, oldest first ("fifo, then carousel")."""
    if not changes:
        return active
    names = [changes[0].old_policy]
    for change in changes:
        if change.policy != names[-1]:
            names.append(change.policy)
    return ", then ".join(names)


def _empty(run: str, policy: str) -> Outcome:
    return Outcome(run, policy, 0, 0, 0, 0, 0, 0, 0, None, Latency(None, None, None, 0))


def _key(choice: PolicyChoice) -> str:
    return repr((choice.policy, sorted(choice.options.items())))
