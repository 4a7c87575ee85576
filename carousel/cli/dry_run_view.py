"""`carousel policy dry-run`'s libraries and its table: one row per policy, and on a site of several each
library's rows before the site's (docs/cli.md)."""

from __future__ import annotations

from rich.table import Table

from carousel.config import Settings
from carousel.config.libraries import build_libraries
from carousel.domain.clock import Clock
from carousel.outlook.projection import Projection
from carousel.outlook.site import SiteProjection
from carousel.policy_admin.dry_run import DryRun
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import Site

SITE = "site"


def dry_run_adapter(settings: Settings, clock: Clock) -> HsmAdapter:
    """The one library's adapter, or a site of every library the settings name (close it after)."""
    libraries = build_libraries(settings, clock)
    if len(libraries) == 1:
        return next(iter(libraries.values()))
    return Site(libraries)


def dry_run_table(done: DryRun) -> Table:
    several = len(done.under_candidate.libraries) > 1
    table = Table(show_edge=False)
    columns = ("policy", "next cycle mounts", "tapes waiting", "plans", "queue drained at")
    for column in ("library", *columns) if several else columns:
        table.add_column(column)
    runs = (("candidate", done.candidate, done.under_candidate), ("active", done.active, done.under_active))
    for label, choice, site in runs:
        rows: list[tuple[str, SiteProjection]] = []
        if several:
            rows += [(name, SiteProjection(p.now, {name: p})) for name, p in site.libraries.items()]
        rows.append((SITE, site))
        for library, projection in rows:
            cells = _cells(f"{label}: {choice.policy}", projection)
            table.add_row(*((library, *cells) if several else cells))
    return table


def _cells(policy: str, site: SiteProjection) -> tuple[str, ...]:
    projections: list[Projection] = list(site.libraries.values())
    drained = site.drained_at.isoformat(timespec="seconds") if site.drained_at else "-"
    return (
        policy,
        str(sum(len(p.plan.selections) for p in projections)),
        str(sum(len(p.plan.waiting) for p in projections)),
        f"{site.plans}{'' if site.complete else ' (rough beyond)'}",
        drained,
    )
