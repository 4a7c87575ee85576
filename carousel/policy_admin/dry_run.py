"""Dry run: what the next cycles would do under a candidate policy, on the live queue, without dispatching.

One snapshot of the live queue and each library, as the scheduler takes it (carousel.outlook.site: each
library of a site on its own tapes, drives and cost figures; a library that does not answer plans as
offline); then the candidate policy's plans projected forward on each library's cost figures
(carousel.outlook.projection), next to the active policy's on the same snapshots. Nothing is claimed and
nothing reaches the library.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.domain.clock import Clock
from carousel.domain.policy_choice import PolicyChoice
from carousel.outlook.site import SiteProjection, project_snapshots, site_snapshots
from carousel.policy_admin.validation import built_policy
from hsm_adapters.base import HsmAdapter


@dataclass(frozen=True, slots=True)
class DryRun:
    candidate: PolicyChoice
    active: PolicyChoice
    under_candidate: SiteProjection  # per library, in the settings' order
    under_active: SiteProjection


def dry_run(
    settings: Settings,
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    *,
    candidate: PolicyChoice,
    active: PolicyChoice,
) -> DryRun:
    """`adapter`: the one library's, or a site's (hsm_adapters.site). InvalidInput (naming the field) when the
    candidate does not build."""
    built_policy(candidate)  # refused before anything is read
    built_policy(active)
    snapshots = site_snapshots(settings, session_factory, adapter, clock)
    return DryRun(
        candidate=candidate,
        active=active,
        under_candidate=project_snapshots(snapshots, lambda: built_policy(candidate)),
        under_active=project_snapshots(snapshots, lambda: built_policy(active)),
    )
