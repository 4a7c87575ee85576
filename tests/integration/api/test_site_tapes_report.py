"""The same tape ID in two libraries is two tapes in the dashboard and the tape reports, and the same drive
name two drives in the drives report, the dashboard and the metrics, on PostgreSQL and SQLite: a site of two
simulated libraries each holding a tape T1 (and naming its drives alike: drive00, drive01), a file asked for
on each, the site cycle stepped in virtual time. The dashboard lists (and counts) two tapes with work, each
with its library; the tapes report has a row per library's T1, with no remount; the remounts report counts two
tapes mounted once each; the mounts report names each mount's library. The drives report, the dashboard's
drives and the drive efficiency metric have a line per library's drive. (A site of one library keeps its
dashboard tables as they were: tests/integration/reports/test_dashboard.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.models import QueuedFileRow, Recall
from carousel.domain.clock import ManualClock
from carousel.reports.table import iso
from carousel.scheduler.site_cycle import SiteCycle
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from policies.registry import build_policy
from tests.integration.api.conftest import Bearer

GB = 10**9
PATHS = {"new": "/new/a", "old": "/old/b"}  # each on its library's T1


class TapeRows(HTMLParser):
    """The dashboard's tape rows (`key`: data-drive, its drive rows): each row's data-library (None when not
    shown) and its cells."""

    def __init__(self, html: str, key: str = "data-tape") -> None:
        super().__init__()
        self.key = key
        self.rows: list[tuple[str | None, list[str]]] = []
        self.stat_tapes = ""
        self._row: list[str] | None = None
        self._library: str | None = None
        self._in_td = self._in_stat = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and self.key in found:
            self._row, self._library = [], found.get("data-library")
        if tag == "td" and self._row is not None:
            self._row.append("")  # an empty cell too
        self._in_td = tag == "td" or self._in_td
        self._in_stat = found.get("id") == "stat-tapes" or self._in_stat

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_td = False
        if tag == "div":
            self._in_stat = False
        if tag == "tr" and self._row is not None:
            self.rows.append((self._library, self._row))
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._in_td:
            self._row[-1] += data.strip()
        if self._in_stat and data.strip():
            self.stat_tapes = data.strip()


def catalogue(tmp_path: Path, name: str, entries: list[tuple[str, str, int]]) -> str:
    path = tmp_path / f"{name}.csv"
    lines = "".join(f"{p},{GB},{tape},{position}\n" for p, tape, position in entries)
    path.write_text("path,size_bytes,tape,position_bytes\n" + lines)
    return str(path)


@pytest.fixture
def library(clock: ManualClock, tmp_path: Path) -> Iterator[Site]:
    """The site the API asks (the conftest's `library`, overridden): `new` (LTO-9) and `old` (LTO-7), each
    with a tape T1."""
    adapters = {
        name: build_simulated_adapter(
            {
                "profile": profile,
                "drives": 2,
                "catalogue": catalogue(tmp_path, name, [(PATHS[name], "T1", 0)]),
            },
            clock,
        )
        for name, profile in (("new", "lto9"), ("old", "lto7"))
    }
    site = Site(adapters)
    yield site
    site.close()


def site_cycle(factory: sessionmaker[Session], site: Site, clock: ManualClock) -> SiteCycle:
    policies = {name: (lambda: build_policy("fifo")) for name in site.libraries}
    return SiteCycle(Settings(policy="fifo"), factory, site.libraries, policies, clock, lookup=site)


def states(factory: sessionmaker[Session]) -> dict[str, tuple[str, str]]:
    with factory() as session:
        rows = session.execute(select(QueuedFileRow.path, QueuedFileRow.state, QueuedFileRow.library))
        return {path: (state, library) for path, state, library in rows}


def ask_both(admin: Bearer) -> None:
    response = admin.api.post(
        "/api/native/v1/requests", json={"paths": list(PATHS.values())}, headers=admin.headers
    )
    assert response.status_code == 201, response.text


def stage(
    site: Site, clock: ManualClock, factory: sessionmaker[Session], watch: Callable[[], None] = lambda: None
) -> None:
    """The site cycle stepped a second at a time until every file asked for is on disk; `watch` called after
    each step that left some not yet."""
    cycle = site_cycle(factory, site, clock)
    for _ in range(600):
        cycle.run_once()
        if {s for s, _ in states(factory).values()} == {"STAGED"}:
            return
        watch()
        clock.advance(1)
    raise AssertionError(f"not staged: {states(factory)}")


def report(admin: Bearer, kind: str, since: Any, until: Any) -> list[dict[str, Any]]:
    query = {"since": iso(since), "until": iso(until), "bucket": "day"}
    response = admin.api.get(f"/api/reports/{kind}", params=query, headers=admin.headers)
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()["rows"]
    return rows


def test_the_same_tape_id_in_two_libraries_is_two_tapes_on_the_dashboard_and_in_the_reports(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    start = clock.now()
    ask_both(admin)
    assert states(session_factory) == {path: ("QUEUED", name) for name, path in PATHS.items()}

    page = TapeRows(admin.api.get("/dashboard", headers=admin.headers).text)
    assert page.stat_tapes == "2"
    # library, tape, queued, queued size, in flight, oldest queued, mounted
    assert [(lib, cells[:3], cells[-1]) for lib, cells in page.rows] == [
        ("new", ["new", "T1", "1"], ""),
        ("old", ["old", "T1", "1"], ""),
    ]

    mounted_seen: set[tuple[str, str]] = set()  # (library mounted in, its tape row's mounted cell)

    def watch() -> None:
        mounted = {name: "T1" in a.capacity().mounted_tapes for name, a in library.libraries.items()}
        if any(mounted.values()) and not all(mounted.values()):  # T1 mounted in one library only
            html = admin.api.get("/dashboard", headers=admin.headers).text
            for name, on in mounted.items():  # the tapes mounted, each named with its library
                assert (f'data-library="{name}">{name} T1</span>' in html) is on
            page = TapeRows(html)
            for lib, cells in page.rows:
                assert cells[-1] == ("yes" if mounted[str(lib)] else ""), (lib, cells)
                mounted_seen.add((str(lib), cells[-1]))

    stage(library, clock, session_factory, watch)
    # seen: one library's T1 mounted, the other's not (a tape mounted elsewhere under its ID is not this one)
    assert {cell for _, cell in mounted_seen} == {"yes", ""}
    until = clock.now() + timedelta(minutes=1)

    tapes = report(admin, "tapes", start, until)
    assert [(r["tape"], r["mounts"], r["remounts"]) for r in tapes] == [
        ("T1", 1, 0),
        ("T1", 1, 0),
    ]  # not 2, 1
    assert [(r["library"], r["tape"], r["mounts"], r["files"], r["remounts"]) for r in tapes] == [
        ("new", "T1", 1, 1, 0),
        ("old", "T1", 1, 1, 0),
    ]
    (day,) = report(admin, "remounts", start, until)
    assert (day["tapes_mounted"], day["mounts"], day["remounts"], day["tapes_remounted"]) == (2, 2, 0, 0)
    assert (day["most_mounted_library"], day["most_mounted_tape"]) == ("new", "T1")  # a tie: the first
    mounts = report(admin, "mounts", start, until)
    assert sorted((m["library"], m["tape"]) for m in mounts) == [("new", "T1"), ("old", "T1")]


def test_the_same_drive_name_in_two_libraries_is_two_drives_in_the_report_on_the_dashboard_and_in_metrics(
    admin: Bearer, library: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    start = clock.now()
    ask_both(admin)
    stage(library, clock, session_factory)
    with session_factory() as session:
        read_on = set(session.execute(select(Recall.library, Recall.drive)))
    assert read_on == {("new", "drive00"), ("old", "drive00")}  # each library's T1 on its own drive00
    clock.advance(60)  # both unmounted: every mount's time is over

    drives = report(admin, "drives", start, clock.now())
    assert [(r["drive"], r["mounts"], r["files"]) for r in drives] == [
        ("drive00", 1, 1),
        ("drive00", 1, 1),
    ]  # not one drive00 with two mounts and two files
    assert [(r["library"], r["drive"], r["mounts"], r["files"]) for r in drives] == [
        ("new", "drive00", 1, 1),
        ("old", "drive00", 1, 1),
    ]
    assert all(0 < r["efficiency"] <= 1 for r in drives)
    figure = admin.api.get(
        "/api/reports/drives",
        params={"since": iso(start), "until": iso(clock.now()), "bucket": "day", "format": "png"},
        headers=admin.headers,
    )
    assert figure.status_code == 200 and figure.content.startswith(b"\x89PNG")

    page = TapeRows(admin.api.get("/dashboard", headers=admin.headers).text, key="data-drive")
    # library, drive, mounts, files, read, mounted, reading, efficiency
    assert [(lib, cells[:4]) for lib, cells in page.rows] == [
        ("new", ["new", "drive00", "1", "1"]),
        ("old", ["old", "drive00", "1", "1"]),
    ]

    samples = {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(admin.api.get("/metrics").text)
        for sample in family.samples
        if sample.name == "carousel_drive_efficiency_ratio"
    }
    assert sorted(samples) == [
        (("drive", "drive00"), ("library", "new")),
        (("drive", "drive00"), ("library", "old")),
    ]
    assert samples == {
        (("drive", r["drive"]), ("library", r["library"])): pytest.approx(r["efficiency"], abs=1e-4)
        for r in drives
    }
