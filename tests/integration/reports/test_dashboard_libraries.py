"""The dashboard of a site of several libraries, on both databases: each library's description (its clock
scale) is on the page."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import Dashboard, build_dashboard
from carousel.domain.clock import ManualClock
from hsm_adapters.base import HsmAdapter
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from tests.conftest import EPOCH
from tests.integration.reports.test_dashboard_buffer import OfflineAdapter

NOW = EPOCH + timedelta(minutes=5)
CATALOGUE = {
    "generate": {"seed": 4, "cartridges": 2, "files_per_cartridge": 4, "size_model": "lognormal:300000:1"}
}


@pytest.fixture
def site() -> Iterator[Site]:
    """Two simulated libraries on clocks of different scales."""
    clock = ManualClock(EPOCH)
    adapters = {
        "a": build_simulated_adapter(
            {"profile": "lto8", "drives": 1, "catalogue": CATALOGUE, "scale": 50}, clock
        ),
        "b": build_simulated_adapter(
            {"profile": "lto7", "drives": 2, "catalogue": CATALOGUE, "scale": 100}, clock
        ),
    }
    site = Site(adapters)
    yield site
    site.close()


def view(factory: sessionmaker[Session], adapter: HsmAdapter | OfflineAdapter) -> Dashboard:
    with factory() as session:
        return build_dashboard(session, adapter, NOW, None, site="t")  # type: ignore[arg-type]


def test_each_library_of_a_site_is_described(session_factory: sessionmaker[Session], site: Site) -> None:
    html = render_dashboard(view(session_factory, site), refresh_s=60)
    for name, scale in (("a", "50x"), ("b", "100x")):
        description = site.libraries[name].describe()  # type: ignore[attr-defined]
        assert f"clock {scale} the wall clock" in description
        assert f'id="library-description-{name}">{name}: {description}<' in html
