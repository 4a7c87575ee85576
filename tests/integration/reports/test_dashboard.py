"""The dashboard: every number it shows checked against the database, and the page rendered by a real
headless Chromium against a real server on loopback, its screenshot checked for size and content."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import httpx
import numpy as np
import pytest
from matplotlib.image import imread
from sqlalchemy import delete, func, select

from carousel.db.engine import transaction
from carousel.db.media_queries import save_drive_state, save_tape_state
from carousel.db.models import DriveStateRow, Mount, QueuedFileRow, Recall, TapeStateRow
from carousel.domain.media import DownMode, DriveState, TapeState
from carousel.domain.states import FILE_ACTIVE, FILE_TAPE_WORK, FILE_WAITING
from tests.integration.browser import screenshot
from tests.integration.live_server import serving
from tests.integration.reports.conftest import Recorded, app_for, client

SCREEN = (1280, 1000)


class Page(HTMLParser):
    """The numbers a person reads on the page: cells marked with data-group/data-state, the stat values
    (by id), the tape rows (by data-tape), the drive rows (by data-drive, with their data-library), the text
    of each section (by id), image sources."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str], int] = {}
        self.stats: dict[str, str] = {}
        self.tapes: list[list[str]] = []
        self.drives: list[tuple[str | None, list[str]]] = []  # (data-library, cells)
        self.sections: dict[str, str] = {}
        self.images: list[str] = []
        self._cell: tuple[str, str] | None = None
        self._stat: str | None = None
        self._tape: list[str] | None = None
        self._in_td = False
        self._section: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "td" and "data-state" in found:
            self._cell = (str(found["data-group"]), str(found["data-state"]))
        if tag == "div" and (found.get("id") or "").startswith("stat-"):
            self._stat = str(found["id"])
        if tag == "tr" and "data-tape" in found:
            self._tape = []  # the row's cells, filled as they come
            self.tapes.append(self._tape)
        if tag == "tr" and "data-drive" in found:
            self._tape = []
            self.drives.append((found.get("data-library"), self._tape))
        if tag == "td":
            self._in_td = True
        if tag == "section" and found.get("id"):
            self._section.append(str(found["id"]))
            self.sections[str(found["id"])] = ""
        if tag == "img":
            self.images.append(str(found["src"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell, self._in_td = None, False
        if tag == "div":
            self._stat = None
        if tag == "tr":
            self._tape = None
        if tag == "section" and self._section:
            self._section.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self.cells[self._cell] = int(data)
        if self._stat is not None and data.strip():
            self.stats[self._stat] = data.strip()
        if self._tape is not None and self._in_td:
            self._tape.append(data.strip())
        for section in self._section:
            self.sections[section] += data


def check_against_database(page: Page, recorded: Recorded) -> None:
    now = recorded.clock.now()
    day_ago = now - timedelta(days=1)
    with recorded.factory() as session:
        queue = session.execute(
            select(QueuedFileRow.grp, QueuedFileRow.state, func.count())
            .where(QueuedFileRow.state.in_([s.value for s in FILE_ACTIVE]))
            .group_by(QueuedFileRow.grp, QueuedFileRow.state)
        ).all()
        tapes = session.execute(
            select(QueuedFileRow.tape, func.count())
            .where(QueuedFileRow.state == "QUEUED")
            .group_by(QueuedFileRow.tape)
        ).all()
        with_work = session.scalar(
            select(func.count(func.distinct(QueuedFileRow.tape))).where(
                QueuedFileRow.state.in_([s.value for s in FILE_TAPE_WORK])
            )
        )
        staged = session.scalar(
            select(func.count()).where(
                Recall.outcome == "STAGED", Recall.finished_at >= day_ago, Recall.finished_at < now
            )
        )
        mounts = session.scalar(
            select(func.count()).where(Mount.mounted_at >= day_ago, Mount.mounted_at < now)
        )
        mounts_per_drive = dict(
            session.execute(
                select(Mount.drive, func.count())
                .where(Mount.mounted_at >= day_ago, Mount.mounted_at < now)
                .group_by(Mount.drive)
            ).all()
        )
    assert queue, "the history ends with files in the queue"
    expected = {(group, state): n for group, state, n in queue}
    shown = {key: n for key, n in page.cells.items() if key[0] != "*" and n}
    assert shown == expected
    for state in {s for _, s in expected}:
        assert page.cells[("*", state)] == sum(n for (_, s), n in expected.items() if s == state)
    waiting = sum(n for (_, s), n in expected.items() if s in FILE_WAITING)
    assert page.stats["stat-waiting"] == str(waiting)
    assert page.stats["stat-in-flight"] == str(sum(expected.values()) - waiting)
    assert page.stats["stat-tapes"] == str(with_work)
    assert page.stats["stat-staged"] == str(staged)
    assert page.stats["stat-mounts"] == str(mounts)
    queued_per_tape = dict(tapes)
    assert page.tapes and all(int(row[1]) == queued_per_tape.get(row[0], 0) for row in page.tapes)
    assert [int(row[1]) for row in page.tapes] == sorted((int(row[1]) for row in page.tapes), reverse=True)
    # a site of one library: its drives by name alone, no library column
    assert [(library, cells[:2]) for library, cells in page.drives] == [
        (None, [drive, str(n)]) for drive, n in sorted(mounts_per_drive.items())
    ]
    capacity = recorded.history.adapter.capacity()
    busy = capacity.drives_total - capacity.drives_free
    assert page.stats["stat-drives"] == f"{busy} / {capacity.drives_total}"
    assert "none recorded" in page.sections["policy-changes"]
    assert "no tape held, every drive up" in page.sections["held"]


def test_every_number_on_the_page_comes_from_the_database(recorded: Recorded) -> None:
    with client(app_for(recorded, shared_metrics=False)) as api:
        response = api.get("/dashboard")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        page = Page(response.text)
        check_against_database(page, recorded)
        # what the library is, with its clock's scale: the page's rates are in the service's clock
        description = recorded.history.adapter.describe()
        assert "clock" in description and f'id="library-description">{description}<' in response.text
        (figure,) = page.images
        assert figure.startswith("api/reports/library?") and "format=png" in figure
        image = api.get("/" + figure)
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"


@pytest.fixture
def served(recorded: Recorded) -> Iterator[str]:
    """The service's app over the recorded history, served by uvicorn on a loopback port of its own."""
    with serving(app_for(recorded, shared_metrics=False)) as url:
        yield url


@pytest.mark.parametrize("recorded", ["sqlite"], indirect=True)
def test_the_dashboard_renders_in_headless_chromium(recorded: Recorded, served: str, tmp_path: Path) -> None:
    shot = tmp_path / "dashboard.png"
    screenshot(f"{served}/dashboard", shot, tmp_path / "chromium-profile", SCREEN)
    assert shot.stat().st_size > 10_000
    pixels = imread(shot, format="png")
    assert pixels.shape[:2] == (SCREEN[1], SCREEN[0])
    rgb = pixels[..., :3].reshape(-1, 3)
    colours = np.unique((rgb * 255).round().astype(np.uint8), axis=0)
    assert len(colours) > 200, f"only {len(colours)} colours: a blank or unstyled page"
    assert rgb.std() > 0.1
    # the header bar is the dark blue of the stylesheet: the CSS was applied
    assert np.allclose(pixels[10, 640, :3], (0x1A / 255, 0x36 / 255, 0x5D / 255), atol=0.02)
    # and the same server's page, fetched over HTTP, shows the database's numbers
    page = Page(httpx.get(f"{served}/dashboard", timeout=30).text)
    check_against_database(page, recorded)


def test_the_tapes_and_drives_operators_hold_back_are_on_the_page(recorded: Recorded) -> None:
    """A broken tape, a disabled one and a drive taken down, each with its reason, who and since when; the
    page's history is shared with other tests, so what is set here is removed again."""
    at = recorded.clock.now()
    with transaction(recorded.factory) as session:
        save_tape_state(session, "default", "TBROKE", TapeState.BROKEN, reason="torn", at=at, who="ops")
        save_tape_state(session, "default", "TDIS", TapeState.DISABLED, reason="audit", at=at, who="ops")
        save_tape_state(session, "default", "TOK", TapeState.ACTIVE, reason="back", at=at, who="ops")
        save_drive_state(
            session, "default", "drive07", DriveState.DOWN, DownMode.NOW, reason="firmware", at=at, who="ops"
        )
    try:
        with client(app_for(recorded, shared_metrics=False)) as api:
            page = Page(api.get("/dashboard").text)
    finally:
        with transaction(recorded.factory) as session:
            session.execute(delete(TapeStateRow).where(TapeStateRow.tape.in_(["TBROKE", "TDIS", "TOK"])))
            session.execute(delete(DriveStateRow).where(DriveStateRow.drive == "drive07"))
    held = page.sections["held"]
    for words in ("tape TBROKE", "broken", "torn", "tape TDIS", "disabled", "audit", "drive drive07"):
        assert words in held, words
    assert "firmware" in held and "TOK" not in held  # an active tape is not held back
    assert "no tape held" not in held
