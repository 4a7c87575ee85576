"""What one library's cycle is to its site (docs/decisions.md §17): its name, whether it runs the site's own
steps, how the site counts its drive time, the lookup across every library, and every library's adapter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from carousel.db.demand_assembly import SiteAssemblies
from carousel.domain.libraries import DEFAULT_LIBRARY
from hsm_adapters.base import HsmAdapter


@dataclass(frozen=True, slots=True)
class LibraryOfSite:
    """The default: the one library of a site that names none, running every step itself."""

    name: str = DEFAULT_LIBRARY
    # the steps done once for the whole site: the disk buffer's upkeep and term work, stale claims, lookups
    site_steps: bool = True
    usage_weights: Mapping[str, float] = field(default_factory=dict)  # reference drive-seconds per library
    lookup: HsmAdapter | None = None  # the site's lookup (hsm_adapters.site.Site); None: the library's own
    # every library's adapter by name, told of the buffer's evicted copies each read; empty: the library's own
    adapters: Mapping[str, HsmAdapter] = field(default_factory=dict)
    # every library's store's copy of the tape queues: they share each fold (carousel.db.demand_assembly)
    assemblies: SiteAssemblies | None = None
