"""The dashboard reads well at common screen widths, in headless Chromium: the page never scrolls sideways,
and from a laptop's width up no card does either, even with long policy changes on it. Times show to the
second, never to the microsecond.

Chromium measures the page the way a person would see it: a probe page served beside the dashboard, on the
same origin, holds one frame per width, and writes what it measured inside each into its own document, which
chromium prints once every frame has loaded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.domain.clock import ManualClock
from carousel.policy_admin.changes import change_policy
from carousel.policy_admin.model import PolicyChoice
from tests.conftest import EPOCH
from tests.integration.browser import rendered_document
from tests.integration.live_server import serving
from tests.integration.reports.history import GROUPS, make_history

PHONE, TABLET, LAPTOP = 390, 768, 1024
WIDTHS = (PHONE, TABLET, LAPTOP, 1280, 1400, 1920)
# a reason with a link in it, and options naming many groups: the long cells of the policy table
REASON = (
    "ticket https://tickets.example.org/browse/STORAGE-20260101-0001?focusedCommentId=123456789012345678 "
    "asks for weights that follow the pledges of every group while the reprocessing campaign drains"
)
WEIGHTS = {f"{group}-{n}": n + 1 for group in GROUPS for n in range(8)}

PROBE = """<!doctype html>
<html><head><meta charset="utf-8"><title>widths</title></head>
<body style="margin: 0">
<script>
const widths = %s;
for (const width of widths) {
  const frame = document.createElement("iframe");
  frame.src = "/dashboard";
  frame.style = `border: 0; display: block; width: ${width}px; height: 900px`;
  frame.dataset.width = width;
  document.body.append(frame);
}
// after every frame (and each frame's figure) has loaded
window.addEventListener("load", () => {
  const measured = [...document.querySelectorAll("iframe")].map((frame) => {
    const page = frame.contentDocument;
    const root = page.documentElement;
    return {
      width: Number(frame.dataset.width),
      viewport: root.clientWidth,
      page: root.scrollWidth,
      scrolling_cards: [...page.querySelectorAll("section")]
        .filter((card) => card.scrollWidth > card.clientWidth)
        .map((card) => `${card.id}: ${card.scrollWidth} px in ${card.clientWidth}`),
      text: page.body.innerText,
    };
  });
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(measured);
  document.body.append(out);
});
</script>
</body></html>
"""


class Measured(HTMLParser):
    """The probe's measurements, from the document chromium printed."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self._inside = False
        self._text = ""
        self.feed(html)
        assert self._text, "the probe wrote nothing: a frame did not load"
        self.frames: list[dict[str, Any]] = json.loads(self._text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._inside = tag == "pre" and ("id", "measured") in attrs

    def handle_endtag(self, tag: str) -> None:
        self._inside = False

    def handle_data(self, data: str) -> None:
        if self._inside:
            self._text += data


@dataclass(frozen=True)
class Shown:
    frames: dict[int, dict[str, Any]]  # by width: what the probe measured in that frame
    times: list[datetime]  # the policy changes' and the page's own, each with microseconds


@pytest.fixture(scope="module")
def shown(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shown]:
    """A short history with two policy changes, at times with microseconds, served with the probe beside it
    and measured by chromium once for every width."""
    work = tmp_path_factory.mktemp("widths")
    database = work / "widths.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    engine = make_engine(f"sqlite:///{database}")
    factory = make_session_factory(engine)
    clock = ManualClock(EPOCH)
    history = make_history(factory, clock, waves=2, files_per_wave=16)
    settings = Settings()
    times = []
    for choice in (PolicyChoice("fifo"), PolicyChoice("carousel", {"fair_share": {"weights": WEIGHTS}})):
        times.append(clock.advance(61.234567))
        with transaction(factory) as session:
            change_policy(session, settings, clock, who="cli:operator", choice=choice, reason=REASON)
    times.append(clock.advance(0.654321))
    service = create_app(settings, adapter=history.adapter, clock=clock, session_factory=factory)

    async def probe(request: Request) -> HTMLResponse:
        return HTMLResponse(PROBE % json.dumps(WIDTHS))

    app = Starlette(routes=[Route("/probe", probe), Mount("/", app=service)])
    try:
        with serving(app) as url:
            document = rendered_document(f"{url}/probe", work / "profile")
    finally:
        history.adapter.close()
        engine.dispose()
    yield Shown({frame["width"]: frame for frame in Measured(document).frames}, times)


def test_the_dashboard_fits_common_widths(shown: Shown) -> None:
    assert sorted(shown.frames) == sorted(WIDTHS)
    wrong = []
    for width, frame in shown.frames.items():
        assert "cli:operator" in frame["text"] and "fair_share" in frame["text"], "policy changes are shown"
        assert frame["viewport"] == width
        if frame["page"] != width:
            wrong.append(f"at {width} px the page is {frame['page']} px wide")
        # narrower than a laptop, a wide table may scroll inside its card: the page itself never does
        if width >= LAPTOP and frame["scrolling_cards"]:
            wrong.append(f"at {width} px these cards scroll sideways: {frame['scrolling_cards']}")
    assert not wrong, wrong


def test_times_show_to_the_second(shown: Shown) -> None:
    text = shown.frames[1400]["text"]
    for moment in shown.times:
        assert moment.microsecond, "the test's times have microseconds to lose"
        assert f"{moment:%Y-%m-%d %H:%M:%S} UTC" in text
    assert not re.search(r"\d\d:\d\d:\d\d[.,]\d", text), "a time to a fraction of a second"
