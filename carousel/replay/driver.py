"""Trace replay: the service's planning path over a memory queue, against the simulated library in virtual
time.

Per tick of the cycle interval, in the service's order: the library's events since the last tick are
applied (completion), the trace's requests that arrived meanwhile are queued (intake), then one pass of the
very planning path the service runs (`carousel.scheduler.planning_path`: snapshot, policy, budget, claim,
hand-over) with the library's health and capacity, fed as the service's cycle feeds it
(`carousel.scheduler.feed`: nothing while the library is offline, the recovery pace after an outage or a
stall, only probes while it is stalled). The simulated library (`hsm_adapters.simulated`) runs on a
ManualClock behind the same adapter the service uses.

Ticks where nothing can change are skipped, which is what makes a replay of days take seconds: after a pass
that claimed nothing, the next pass runs at the first tick at or after the earliest of the next arrival, the
library's next event, the plan's `wake_at`, the next retry coming due and a stalled library's next probe.
Until then the snapshot and the library stay as they are, and a policy is a function of its snapshot, so the
skipped passes would have planned nothing either (tests/replay/test_replay.py checks it against a replay
of every tick).

A site of several libraries (`ReplayConfig.libraries`, docs/decisions.md §17) runs one simulated library, one
planning path, recovery pace and read-timeout watch per library over the one memory queue
(`carousel.replay.site`): each tick applies every library's events, then plans each library in turn. Without
`libraries` the replay is one library named `default`, exactly as before.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from carousel.config import Settings
from carousel.domain.buffer import BufferLimits
from carousel.domain.clock import ManualClock
from carousel.domain.completion import RetryRule
from carousel.domain.errors import ConfigError
from carousel.domain.libraries import DEFAULT_LIBRARY, usage_weights
from carousel.domain.planning import Plan
from carousel.replay.library_setup import LibraryFile, apply_library_file, policy_setup
from carousel.replay.memory_store import MemoryQueueStore
from carousel.replay.site import LibraryQueue, LibrarySpec
from carousel.replay.trace import Trace, TraceRow
from carousel.scheduler.feed import FeedControl, FeedSettings
from carousel.scheduler.planning_path import Dispatch, PlanningPath
from carousel.scheduler.read_timeouts import ReadTimeouts
from hsm_adapters.base import Health, HsmAdapter
from hsm_adapters.simulated.adapter import SimulatedAdapter
from hsm_adapters.simulated.builder import LibrarySetup, build_library
from hsm_adapters.simulated.catalogue import Catalogue, CatalogueInvalid
from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.library import Library, LibraryStats
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import DriveProfile, load_profile
from policies.base import Policy, library_needs_of
from policies.registry import build_policy

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # trace second 0
MAX_VIRTUAL_S = 10 * 365 * 86_400.0  # a replay that has not ended after ten virtual years is stuck
_INSTANT = timedelta(microseconds=1)  # reads started up to now, the clock's own instant included


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    profile: str  # a built-in profile name or a profile file
    drives: int
    policy: str
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0  # the fault plan's random draws and the choice of new media
    library: LibraryFile | None = None
    library_source: str = "library"
    cycle_interval_s: float = 2.0  # the service's default
    max_files_per_cycle: int = 10_000
    max_attempts: int = 3
    retry_backoff_s: float = 600.0
    skip_idle_ticks: bool = True  # False runs a pass at every tick, as the service does (for checks)
    # Library seconds per clock second, as the service's simulated library option `scale`: the trace's
    # times, the cycle interval and the policy's clock are clock seconds, the library runs this much faster
    # (a replay of the service's own history, carousel.policy_admin.history_replay).
    time_scale: float = 1.0
    # the service's recovery pace and liveness watch (carousel.scheduler.feed), with the service's defaults:
    # a library back from an outage, or moving again after a stall, gets its backlog as the service gives it
    feed: FeedSettings = field(default_factory=FeedSettings)
    fair_share_window_s: float = 86_400.0  # the service's fair_share_window_s
    # the service's read timeouts (carousel.scheduler.read_timeouts): a read that hangs is cancelled and its
    # attempt fails after factor x its read time + margin, as in the service
    read_timeout_factor: float = 3.0
    read_timeout_margin_s: float = 600.0
    # the disk buffer, accounting only (the replay writes no bytes); None: no buffer, nothing limits admission
    buffer: BufferLimits | None = None
    # how long after its file is staged a client releases it (unless its trace row says): the pin's length
    release_after_s: float = 0.0
    # a site of several libraries, each with its profile and drives (profile and drives above then unused);
    # empty: one library named `default` of `profile` × `drives`
    libraries: tuple[LibrarySpec, ...] = ()

    def sites(self) -> tuple[LibrarySpec, ...]:
        """The libraries replayed: `libraries`, or the one `default` library."""
        return self.libraries or (LibrarySpec(DEFAULT_LIBRARY, self.profile, self.drives),)


def with_service_settings(config: ReplayConfig, settings: Settings) -> ReplayConfig:
    """`config` planning as the service configured by `settings` plans: its cycle interval, files per
    cycle, retries, recovery pace, liveness watch, fair-share window, read timeouts and disk buffer (its
    capacity and watermarks, clients holding each file its default lifetime); the policy stays `config`'s."""
    return replace(
        config,
        cycle_interval_s=settings.cycle_interval_s,
        max_files_per_cycle=settings.max_files_per_cycle,
        max_attempts=settings.max_attempts,
        retry_backoff_s=settings.retry_backoff_s,
        feed=FeedSettings.of(settings),
        fair_share_window_s=settings.fair_share_window_s,
        read_timeout_factor=settings.read_timeout_factor,
        read_timeout_margin_s=settings.read_timeout_margin_s,
        buffer=settings.buffer.limits() if settings.buffer.enabled else None,
        release_after_s=float(settings.buffer.default_lifetime_s) if settings.buffer.enabled else 0.0,
    )


@dataclass(slots=True)
class ReplayResult:
    config: ReplayConfig
    setup: LibrarySetup
    profile: DriveProfile
    physics: TapePhysics
    trace: Trace
    store: MemoryQueueStore
    library: LibraryStats
    cycles: int  # planning passes run (skipped ticks not counted)
    ticks: int  # cycle intervals the replay spanned
    handovers: list[tuple[float, int]]  # (second, files handed to the library) of every pass
    # every library of the site, in the config's order (one, `default`, unless the config names several);
    # setup, profile, physics and library above are the first's
    libraries: tuple[LibraryRun, ...] = ()


@dataclass(frozen=True, slots=True)
class LibraryRun:
    """One library of a replayed site, as it ran."""

    name: str
    drives: int
    setup: LibrarySetup
    profile: DriveProfile
    physics: TapePhysics
    stats: LibraryStats


@dataclass(frozen=True, slots=True)
class ReplayLibrary:
    """The simulated library a replay runs against, as the policy's system ran it."""

    library: Library
    physics: TapePhysics
    profile: DriveProfile
    setup: LibrarySetup

    def adapter(self, clock: ManualClock, scale: float = 1.0) -> SimulatedAdapter:
        """The library behind the service's adapter on `clock`, with the setup's read order."""
        return SimulatedAdapter(self.library, clock, scale=scale, read_order=self.setup.read_order)


def replay_library(trace: Trace, config: ReplayConfig, policy: Policy | None = None) -> ReplayLibrary:
    """A fresh library holding the trace's files, set up as the configured policy declares (`policy`, if the
    caller has built it already), with the config's library file over it."""
    if config.drives < 1:
        raise ConfigError(f"drives must be at least 1, got {config.drives}")
    return _library_of(trace.rows, trace.source, config.sites()[0], config, policy)


def site_libraries(trace: Trace, config: ReplayConfig) -> dict[str, ReplayLibrary]:
    """Every library of the configured site, fresh, each holding its own rows' files and set up as the replay
    sets it up: what the service runs when it is compared with a replay."""
    return {
        spec.name: _library_of(
            trace.rows if not config.libraries else tuple(r for r in trace.rows if r.library == spec.name),
            trace.source,
            spec,
            config,
            None,
        )
        for spec in config.sites()
    }


def _library_of(
    rows: tuple[TraceRow, ...],
    source: str,
    spec: LibrarySpec,
    config: ReplayConfig,
    policy: Policy | None,
) -> ReplayLibrary:
    profile = load_profile(spec.profile)
    physics = TapePhysics(profile)
    if policy is None:
        policy = build_policy(config.policy, config.policy_options)
    setup = apply_library_file(
        policy_setup(library_needs_of(policy)), config.library, source=config.library_source
    )
    setup = apply_library_file(setup, spec.changes, source=f"library {spec.name}")
    if setup.faults is not None and config.seed:  # the replay's seed, every fault kept
        setup = replace(setup, faults=replace(setup.faults, seed=config.seed))
    catalogue = _catalogue(rows, source, profile)
    library = build_library(physics, catalogue, drives=spec.drives, setup=setup, seed=config.seed)
    return ReplayLibrary(library=library, physics=physics, profile=profile, setup=setup)


@dataclass(frozen=True, slots=True)
class PassSeen:
    """One planning pass as an observer sees it, just after it ran: the trace's first `arrived` rows are
    queued (store row n is trace row n)."""

    dispatch: Dispatch
    store: MemoryQueueStore
    arrived: int


@dataclass(slots=True)
class _Site:
    """One library of the replayed site and the service's machinery that runs it."""

    spec: LibrarySpec
    built: ReplayLibrary
    adapter: SimulatedAdapter
    queue: LibraryQueue
    path: PlanningPath
    feed: FeedControl
    read_timeouts: ReadTimeouts
    plan: Plan | None = None  # its last pass's plan, as reported (its wake_at, its waiting reasons)


def _sites(trace: Trace, config: ReplayConfig, store: MemoryQueueStore, clock: ManualClock) -> list[_Site]:
    specs = config.sites()
    names = {spec.name for spec in specs}
    unknown = [name for name in trace.libraries if name not in names]
    if unknown:
        raise ConfigError(
            f"{trace.source}: column library: {unknown[0]} is not a library of the replay"
            f" (its libraries: {', '.join(sorted(names))})"
        )
    counter = itertools.count(1)  # one counter for the site: claim keys stay unique across libraries
    sites = []
    # who hears of the shared buffer's evictions: every library's adapter, filled in as each is built
    adapters: dict[str, HsmAdapter] = {}
    for spec in specs:
        policy = build_policy(config.policy, config.policy_options)  # each library plans on its own
        rows = trace.rows if not config.libraries else tuple(r for r in trace.rows if r.library == spec.name)
        built = _library_of(rows, trace.source, spec, config, policy)
        adapter = built.adapter(clock, config.time_scale)
        adapters[spec.name] = adapter
        queue = LibraryQueue(store, spec.name)
        path = PlanningPath(
            queue,
            adapter,
            policy,
            clock,
            max_files_per_cycle=config.max_files_per_cycle,
            costs=library_costs(built.physics, built.setup.robots).per_clock(config.time_scale),
            new_key=lambda: f"c{next(counter)}",
            buffer=store.buffer,
            libraries=adapters,
        )
        feed = FeedControl(config.feed, max_files_per_cycle=config.max_files_per_cycle, costs=path.costs)
        read_timeouts = ReadTimeouts(
            queue.reads_started_before,
            store.fail_attempts,
            adapter,
            clock,
            costs=path.costs,
            factor=config.read_timeout_factor,
            margin_s=config.read_timeout_margin_s,
        )
        sites.append(_Site(spec, built, adapter, queue, path, feed, read_timeouts))
    return sites


def replay(
    trace: Trace, config: ReplayConfig, *, observer: Callable[[PassSeen], None] | None = None
) -> ReplayResult:
    """`observer`, if given, is called after every planning pass (to measure, never to steer)."""
    if config.cycle_interval_s <= 0:
        raise ConfigError(f"cycle interval must be positive, got {config.cycle_interval_s}")
    if config.time_scale <= 0:
        raise ConfigError(f"time scale must be positive, got {config.time_scale}")
    if not config.release_after_s >= 0:
        raise ConfigError(f"release_after_s must be a number of seconds >= 0, got {config.release_after_s}")
    build_policy(config.policy, config.policy_options)  # first: a bad option is the policy's error
    if config.drives < 1 and not config.libraries:
        raise ConfigError(f"drives must be at least 1, got {config.drives}")
    clock = ManualClock(EPOCH)
    store = MemoryQueueStore(
        RetryRule(config.max_attempts, config.retry_backoff_s),
        track_usage="fair_share" in config.policy_options,
        usage_window_s=config.fair_share_window_s,
        buffer=config.buffer,
        release_after_s=config.release_after_s,
        usage_weights=usage_weights(
            {spec.name: load_profile(spec.profile).rate_bytes_per_s for spec in config.sites()}
        ),
    )
    sites = _sites(trace, config, store, clock)

    rows = trace.rows
    interval = config.cycle_interval_s
    arrived = 0
    tick = 0
    cycles = 0
    handovers: list[tuple[float, int]] = []
    while True:
        now_s = tick * interval
        if now_s > MAX_VIRTUAL_S:
            raise ConfigError(
                f"replay stuck: {store.active} files still wait after {now_s:g} s of virtual time"
            )
        clock.set(EPOCH + timedelta(seconds=now_s))
        for site in sites:
            events = site.adapter.poll_events()
            site.feed.observe_events(events, clock.now())
            store.apply(events, clock.now(), library=site.spec.name)
        while arrived < len(rows) and rows[arrived].arrival_s <= now_s:
            row = rows[arrived]
            store.add(
                path=row.path,
                tape=row.tape,
                position=row.position_bytes,
                size=row.size_bytes,
                group=row.group,
                priority=row.priority,
                at=EPOCH + timedelta(seconds=row.arrival_s),
                hold_s=row.release_after_s,
                library=row.library if config.libraries else DEFAULT_LIBRARY,
            )
            arrived += 1
        if arrived == len(rows) and store.active == 0:
            break
        claimed = 0
        submitted = 0
        for site in sites:
            dispatch = _pass(site, tick, interval, clock)
            claimed += dispatch.claimed
            submitted += dispatch.files_submitted
            if observer is not None:
                observer(PassSeen(dispatch, store, arrived))
        cycles += 1
        handovers.append((now_s, submitted))
        if claimed or not config.skip_idle_ticks:
            tick += 1
            continue
        upcoming = [
            rows[arrived].arrival_s if arrived < len(rows) else None,
            _seconds(store.next_due()),
            _seconds(store.next_release()),  # a pin ends: the buffer may make room
        ]
        for site in sites:
            upcoming += [
                _clock_seconds(site.built.library.next_event_time(), config.time_scale),
                _seconds(site.plan.wake_at if site.plan is not None else None),
                _seconds(site.feed.next_probe_at()),
                _timeout_check_after(site.read_timeouts, site.queue, clock.now(), interval, len(store.files)),
            ]
        soonest = min((t for t in upcoming if t is not None), default=None)
        if soonest is None or soonest > MAX_VIRTUAL_S:
            raise ConfigError(
                f"replay stuck at {now_s:g} s: {store.active} files wait and nothing will change"
                f" (policy {config.policy}: {_first_reason(sites)})"
            )
        tick = max(tick + 1, math.ceil(soonest / interval - 1e-9))
    ticks = tick
    # let the libraries finish their unmounts, so every mount has its end
    for site in sites:
        while (t := _clock_seconds(site.built.library.next_event_time(), config.time_scale)) is not None:
            # a clock keeps microseconds: round up, or the library would stay just short of its event
            clock.set(max(clock.now(), EPOCH + timedelta(microseconds=math.ceil(t * 1e6))))
            store.apply(site.adapter.poll_events(), clock.now(), library=site.spec.name)
    first = sites[0].built
    return ReplayResult(
        config=config,
        setup=first.setup,
        profile=first.profile,
        physics=first.physics,
        trace=trace,
        store=store,
        library=first.library.stats(),
        cycles=cycles,
        ticks=ticks,
        handovers=handovers,
        libraries=tuple(_run_of(site) for site in sites),
    )


def _run_of(site: _Site) -> LibraryRun:
    built = site.built
    return LibraryRun(
        site.spec.name, site.spec.drives, built.setup, built.profile, built.physics, built.library.stats()
    )


def _pass(site: _Site, tick: int, interval: float, clock: ManualClock) -> Dispatch:
    """One library's planning pass, as the service's cycle runs it: read timeouts, its recovery pace, the
    planning path. A library offline or stalled holds back its own work only."""
    adapter, feed, path = site.adapter, site.feed, site.path
    health = adapter.health()
    if health is not Health.OFFLINE and _checks_timeouts(site.read_timeouts, tick, interval):
        site.read_timeouts.run()  # as the cycle: reads that hang are cancelled and their attempts fail
    budget = feed.budget(health, clock.now())  # the service's pace after an outage or a stall
    path.max_files_per_cycle = max(budget.files, 1)
    dispatch = path.run(adapter.capacity(), health is not Health.OFFLINE, submit=budget.files > 0)
    reported = feed.after_pass(dispatch, budget, clock.now())
    site.plan = replace(reported, wake_at=dispatch.plan.wake_at)
    return dispatch


def _first_reason(sites: list[_Site]) -> str:
    """The first waiting reason any library's last plan gave, for a replay that cannot go on."""
    for site in sites:
        if site.plan is not None and site.plan.waiting:
            return next(iter(site.plan.waiting.values()))
    return "no reason given"


def _clock_seconds(library_s: float | None, time_scale: float) -> float | None:
    return None if library_s is None else library_s / time_scale


def _checks_timeouts(read_timeouts: ReadTimeouts, tick: int, interval: float) -> bool:
    """The service's cycle checks for hung reads at its first cycle in each slot (it runs every tick): the
    replay checks at the same ticks only, whichever others it runs."""
    at = EPOCH + timedelta(seconds=tick * interval)
    return tick == 0 or read_timeouts.slot(at) != read_timeouts.slot(at - timedelta(seconds=interval))


def _timeout_check_after(
    read_timeouts: ReadTimeouts, queue: LibraryQueue, now: datetime, interval: float, files: int
) -> float | None:
    """The first tick (in seconds) at which the service's check would find a read in flight overdue."""
    deadline = read_timeouts.deadline(queue.reads_started_before(now + _INSTANT, files))
    if deadline is None:
        return None
    tick = math.floor((deadline - EPOCH).total_seconds() / interval) + 1  # the first tick after it
    while not _checks_timeouts(read_timeouts, tick, interval):
        tick += 1  # at most a slot's worth of ticks
    return tick * interval


def _seconds(when: datetime | None) -> float | None:
    return None if when is None else (when - EPOCH).total_seconds()


def _catalogue(rows: tuple[TraceRow, ...], source: str, profile: DriveProfile) -> Catalogue:
    first: dict[str, tuple[int, str, int]] = {}
    for row in rows:
        first.setdefault(row.path, (row.size_bytes, row.tape, row.position_bytes))
    paths = list(first)
    try:
        return Catalogue(
            paths,
            [first[p][0] for p in paths],
            [first[p][1] for p in paths],
            [first[p][2] for p in paths],
            capacity_bytes=profile.capacity_bytes,
        )
    except CatalogueInvalid as exc:
        raise ConfigError(
            f"{source}: the files do not fit profile {profile.name}'s cartridges:"
            f" {paths[exc.problem.row]} ({exc.problem.column}): {exc}"
        ) from exc
