"""A site of several libraries behind one queue (docs/decisions.md §17): one scheduling cycle, the leader
lock held once, planning each library in turn with its own cycle (carousel.scheduler.cycle), which is the
planning path the trace replay runs per library too.

Each library's cycle takes its own adapter's events (an event stream per library), hands over its own claims,
watches its own files in flight and reads, and keeps its own health, recovery pace and liveness: one
library's outage or stall pauses its own work only. The site's steps (the disk buffer's upkeep, stale claims,
lookups across every library) run once, in the first library's cycle. Fair-share usage is the site's, each
library's drive time counted in reference drive-seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import fields

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import CompletionReport
from carousel.config import Settings
from carousel.db.demand_assembly import SiteAssemblies
from carousel.db.leader_lock import LeaderLock, leader_lock_for
from carousel.db.transient_errors import database_unavailable
from carousel.domain.clock import Clock
from carousel.domain.libraries import usage_weights
from carousel.scheduler.cycle import Cycle, CycleReport
from carousel.scheduler.planning_path import published_costs
from carousel.scheduler.site_role import LibraryOfSite
from hsm_adapters.base import Health, HsmAdapter
from policies.base import Policy

log = structlog.get_logger(__name__)

# what a site's report adds up over its libraries
_COUNTS = tuple(
    f.name
    for f in fields(CycleReport)
    if f.type in ("int", int) and f.name not in {"budget"}  # the budget is per library
)


_EVENT_COUNTS = tuple(f.name for f in fields(CompletionReport) if f.name != "stale")


def site_weights(adapters: Mapping[str, HsmAdapter]) -> dict[str, float]:
    """Reference drive-seconds per library, from each library's published rate; a library that publishes no
    costs counts 1 (as the one library of a site always did)."""
    rates = {
        name: c.rate_bytes_per_s for name, a in adapters.items() if (c := published_costs(a)) is not None
    }
    weights = usage_weights(rates)
    return {name: weights.get(name, 1.0) for name in adapters}


class SiteCycle:
    def __init__(
        self,
        settings: Settings,
        session_factory: sessionmaker[Session],
        adapters: Mapping[str, HsmAdapter],
        policies: Mapping[str, Callable[[], Policy]],
        clock: Clock,
        *,
        lookup: HsmAdapter,
        leader_lock: LeaderLock | None = None,
    ) -> None:
        """`policies`: per library, where its cycle takes its policy each time (an instance of its own: a
        policy may remember what it planned)."""
        if not adapters:
            raise ValueError("a site has at least one library")
        self.leader_lock = leader_lock or leader_lock_for(session_factory)
        weights = site_weights(adapters)
        first = next(iter(adapters))
        assemblies = SiteAssemblies()
        self.cycles = {
            name: Cycle(
                settings,
                session_factory,
                adapter,
                policies[name](),
                clock,
                leader_lock=self.leader_lock,
                policy_source=policies[name],
                site=LibraryOfSite(name, name == first, weights, lookup, adapters, assemblies),
            )
            for name, adapter in adapters.items()
        }

    def run_once(self) -> CycleReport:
        """Every library's cycle in turn under one hold of the leader lock; the report adds them up and
        keeps each library's (`libraries`)."""
        started = time.perf_counter()
        report = CycleReport(leader=False)
        try:
            with self.leader_lock.hold() as leader:
                report.leader = leader
                if not leader:
                    for cycle in self.cycles.values():
                        cycle.live.leading = False
                if leader:
                    for name, cycle in self.cycles.items():  # every library's news first: one snapshot
                        cycle.take_news(report.libraries.setdefault(name, CycleReport(leader=True)))
                    for name, cycle in self.cycles.items():
                        cycle.plan_and_submit(report.libraries[name])
        except SQLAlchemyError as exc:
            if not database_unavailable(exc):
                raise
            report.database_unavailable = True
            report.errors.append(f"database unavailable: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            log.warning("database unavailable: cycle skipped", error=report.errors[-1])
        _add_up(report)
        report.elapsed_s = time.perf_counter() - started
        return report

    def pump(self) -> None:
        """Every library's events applied as they arrive (carousel.scheduler.live_events), one after the
        other."""
        for cycle in self.cycles.values():
            cycle.live.pump()

    def close(self) -> None:
        """Stop leading (a standby takes over at its next cycle)."""
        for cycle in self.cycles.values():
            cycle.live.leading = False
        self.leader_lock.release()


def _events_added(reports: list[CompletionReport]) -> CompletionReport | None:
    if not reports:
        return None
    total = CompletionReport()
    for own in reports:
        for name in _EVENT_COUNTS:
            setattr(total, name, getattr(total, name) + getattr(own, name))
        total.stale.extend(own.stale)
    return total


def _add_up(report: CycleReport) -> None:
    """The site's figures from its libraries': counts added, errors named by library, the health the site's
    (ONLINE when every library is, OFFLINE when none is)."""
    libraries = report.libraries
    if not libraries:
        return
    for name in _COUNTS:
        setattr(report, name, sum(getattr(own, name) for own in libraries.values()))
    report.budget = sum(own.budget for own in libraries.values())
    report.new_term = any(own.new_term for own in libraries.values())
    report.stall_ended = any(own.stall_ended for own in libraries.values())
    report.events = _events_added([own.events for own in libraries.values() if own.events is not None])
    first = next(iter(libraries.values()))  # the one that ran the site's steps
    report.buffer, report.buffer_space = first.buffer, first.buffer_space
    stalled = [own.stalled_since for own in libraries.values() if own.stalled_since is not None]
    report.stalled_since = min(stalled, default=None)
    report.errors.extend(f"library {name}: {e}" for name, own in libraries.items() for e in own.errors)
    states = [own.health for own in libraries.values()]
    if all(s is Health.ONLINE for s in states):
        report.health = Health.ONLINE
    elif all(s is Health.OFFLINE for s in states):
        report.health = Health.OFFLINE
    else:
        report.health = Health.DEGRADED
