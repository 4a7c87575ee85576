"""Dry run: what the next cycles would do under a candidate policy, on the live queue, without dispatching.

One snapshot of the live queue and the library, as the scheduler takes it (carousel.scheduler.live_snapshot:
a library that does not answer plans as offline); then the candidate policy's plans projected forward on the
library's cost figures (carousel.outlook.projection), next to the active policy's on the same snapshot.
Nothing is claimed and nothing reaches the library.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.domain.clock import Clock
from carousel.domain.policy_choice import PolicyChoice
from carousel.outlook.projection import Projection, project
from carousel.policy_admin.validation import built_policy
from carousel.scheduler.live_snapshot import live_buffer, live_queue_store, live_snapshot
from hsm_adapters.base import HsmAdapter


@dataclass(frozen=True, slots=True)
class DryRun:
    candidate: PolicyChoice
    active: PolicyChoice
    under_candidate: Projection
    under_active: Projection


def dry_run(
    settings: Settings,
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    *,
    candidate: PolicyChoice,
    active: PolicyChoice,
) -> DryRun:
    """InvalidInput (naming the field) when the candidate does not build."""
    candidate_policy = built_policy(candidate)
    active_policy = built_policy(active)
    store = live_queue_store(settings, session_factory, library=None)  # every library of the site
    snapshot = live_snapshot(store, adapter, clock, buffer=live_buffer(settings, session_factory))
    return DryRun(
        candidate=candidate,
        active=active,
        under_candidate=project(snapshot, candidate_policy.plan),
        under_active=project(snapshot, active_policy.plan),
    )
