"""The dashboard of a site of several libraries and of files a removed library left behind, on both
databases: each library's description (its clock scale) is on the page; files whose row names a library the
settings no longer name are said to wait for it, and are not counted as the running libraries' work."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import Session, sessionmaker

from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import Dashboard, build_dashboard
from carousel.db import buffer_queries
from carousel.db.library_queries import StrandedWork
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.observability.database_collector import DatabaseCollector
from hsm_adapters.base import HsmAdapter
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from tests.conftest import EPOCH
from tests.integration.reports.test_dashboard_buffer import OfflineAdapter
from tests.integration.scheduler.rows import add_request, queued

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


def add_files(factory: sessionmaker[Session], library: str, tape: str, states: list[FileState]) -> None:
    rows = [queued(f"/{library}/{tape}/{n}", tape, n, EPOCH, state=state) for n, state in enumerate(states)]
    for row in rows:
        row.library = library
    add_request(factory, rows, EPOCH)


def test_each_library_of_a_site_is_described(session_factory: sessionmaker[Session], site: Site) -> None:
    html = render_dashboard(view(session_factory, site), refresh_s=60)
    for name, scale in (("a", "50x"), ("b", "100x")):
        description = site.libraries[name].describe()  # type: ignore[attr-defined]
        assert f"clock {scale} the wall clock" in description
        assert f'id="library-description-{name}">{name}: {description}<' in html


def test_a_site_of_one_named_library_is_described_as_that_library(
    session_factory: sessionmaker[Session], site: Site
) -> None:
    only = Site({"a": site.libraries["a"]})
    html = render_dashboard(view(session_factory, only), refresh_s=60)
    description = site.libraries["a"].describe()  # type: ignore[attr-defined]
    assert f'id="library-description">a: {description}<' in html  # named, as the banner names it


def test_files_of_a_library_not_in_the_settings_are_said_to_wait_for_it(
    session_factory: sessionmaker[Session],
) -> None:
    """A site of one library (`default`) whose queue still holds files of `b`, an admin's removed library."""
    add_files(session_factory, "default", "A1", [FileState.QUEUED, FileState.QUEUED])
    add_files(session_factory, "default", "A2", [FileState.SUBMITTED])
    add_files(session_factory, "b", "B1", [FileState.QUEUED] * 3)
    add_files(session_factory, "b", "B2", [FileState.SUBMITTED])
    unresolved = queued("/later", "A1", 0, EPOCH, state=FileState.UNRESOLVED)
    unresolved.tape = None  # not looked up yet: its row names `default` until the lookup chooses
    add_request(session_factory, [unresolved], EPOCH)

    dashboard = view(session_factory, OfflineAdapter())
    assert dashboard.stranded == [StrandedWork("b", queued=3, in_flight=1, tapes=2)]
    # the running library's work only: its drives idle beside b's files would look stuck
    assert (dashboard.waiting_total, dashboard.in_flight_total, dashboard.tapes_with_work) == (3, 1, 2)
    assert [(t.library, t.tape) for t in dashboard.busiest_tapes] == [("default", "A1"), ("default", "A2")]
    # the queue by group still holds every file not yet ended: it is the groups' view
    assert dashboard.queued_total == 8

    html = render_dashboard(dashboard, refresh_s=60)
    warning = html[html.index('id="not-in-settings"') :]
    assert "4 files wait for library b, which is not in the settings: name it again or cancel them" in warning
    assert "3 queued, 1 handed over before it was removed, on 2 tapes" in warning
    assert 'data-tape="B1"' not in html and 'data-tape="A1"' in html
    assert "3 more of libraries not in the settings" in html  # beside the files waiting


def test_on_a_site_the_files_of_a_library_it_lacks_are_apart(
    session_factory: sessionmaker[Session], site: Site
) -> None:
    add_files(session_factory, "a", "T1", [FileState.QUEUED])
    add_files(session_factory, "b", "T1", [FileState.QUEUED])  # the same tape ID in b: another tape
    add_files(session_factory, "c", "T9", [FileState.CLAIMED])  # c is in no setting
    dashboard = view(session_factory, site)
    assert dashboard.stranded == [StrandedWork("c", queued=0, in_flight=1, tapes=1)]
    assert (dashboard.waiting_total, dashboard.in_flight_total, dashboard.tapes_with_work) == (2, 0, 2)
    html = render_dashboard(dashboard, refresh_s=60)
    assert "1 file waits for library c, which is not in the settings" in html


def test_metrics_tell_the_files_of_a_library_not_in_the_settings_apart(
    session_factory: sessionmaker[Session],
) -> None:
    """The scrape's figures: the tapes of the site's libraries only, and the stranded files per library and
    kind, for an alert; without the site's names (no libraries given), every tape and no stranded figure."""
    add_files(session_factory, "default", "A1", [FileState.QUEUED])
    add_files(session_factory, "b", "B1", [FileState.QUEUED] * 3)
    add_files(session_factory, "b", "B2", [FileState.SUBMITTED])

    def scraped(libraries: tuple[str, ...] | None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        registry = CollectorRegistry()
        registry.register(DatabaseCollector(session_factory, ManualClock(NOW), libraries))
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in registry.collect()
            for sample in family.samples
            if sample.name in ("carousel_tapes_with_work", "carousel_stranded_files")
        }

    assert scraped(("default",)) == {
        ("carousel_tapes_with_work", ()): 1.0,
        ("carousel_stranded_files", (("kind", "queued"), ("library", "b"))): 3.0,
        ("carousel_stranded_files", (("kind", "in_flight"), ("library", "b"))): 1.0,
    }
    assert scraped(None) == {("carousel_tapes_with_work", ()): 3.0}


def test_the_smallest_queued_file_is_one_a_running_library_reads(
    session_factory: sessionmaker[Session],
) -> None:
    """Whether the buffer is full for the queue is asked of the files a cycle could admit: a removed library's
    small file would call a buffer full that still has room for every file the site reads."""
    stray = queued("/b/B1/0", "B1", 0, EPOCH, size=10)
    stray.library = "b"
    mine = queued("/default/A1/0", "A1", 0, EPOCH, size=5_000)
    add_request(session_factory, [stray, mine], EPOCH)
    with session_factory() as session:
        assert buffer_queries.smallest_queued_bytes(session, ["default"]) == 5_000
        assert buffer_queries.smallest_queued_bytes(session, ["default", "b"]) == 10
        assert buffer_queries.smallest_queued_bytes(session, ["c"]) is None
