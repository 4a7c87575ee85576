"""Dry run: what the next cycles would do under a candidate policy, on the live queue, without dispatching.

One snapshot of the queue (the scheduler's own read) and the library's health and capacity; then the
candidate policy's plans projected forward on the library's cost figures (carousel.outlook.projection),
next to the active policy's on the same snapshot. Nothing is claimed and nothing reaches the library.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from carousel.db.usage_queries import DEFAULT_WINDOW_S
from carousel.domain.clock import Clock
from carousel.domain.policy_choice import PolicyChoice
from carousel.outlook.projection import Projection, project
from carousel.policy_admin.validation import built_policy
from carousel.scheduler.planning_path import PlanningPath, published_costs
from carousel.scheduler.queue_store import DatabaseQueueStore
from hsm_adapters.base import Capacity, Health, HsmAdapter


@dataclass(frozen=True, slots=True)
class DryRun:
    candidate: PolicyChoice
    active: PolicyChoice
    under_candidate: Projection
    under_active: Projection


def dry_run(
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    *,
    candidate: PolicyChoice,
    active: PolicyChoice,
    usage_window_s: float = DEFAULT_WINDOW_S,
) -> DryRun:
    """InvalidInput (naming the field) when the candidate does not build."""
    candidate_policy = built_policy(candidate)
    active_policy = built_policy(active)
    try:
        health, capacity = adapter.health(), adapter.capacity()
    except Exception:  # a library that does not answer plans as offline, as the cycle does
        health, capacity = Health.OFFLINE, Capacity(drives_total=0, drives_free=0)
    store = DatabaseQueueStore(session_factory, usage_window_s=usage_window_s)
    path = PlanningPath(
        store, adapter, candidate_policy, clock, max_files_per_cycle=1, costs=published_costs(adapter)
    )
    snapshot = path.snapshot(capacity, health is not Health.OFFLINE)
    return DryRun(
        candidate=candidate,
        active=active,
        under_candidate=project(snapshot, candidate_policy.plan),
        under_active=project(snapshot, active_policy.plan),
    )
