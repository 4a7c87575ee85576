"""The dashboard's disk buffer panel, on both databases: its numbers are the database's (bytes on disk,
pinned, evictable, reserved, free, room), it says when queued work waits for space, and it is absent with the
buffer off."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import update

from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import build_dashboard
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.buffer import BufferLimits, epoch_s
from carousel.domain.states import FileState
from tests.conftest import EPOCH
from tests.integration.scheduler.rows import add_request, queued

MB = 10**6
LIMITS = BufferLimits(100 * MB, high_watermark=0.9, low_watermark=0.5)


class OfflineAdapter:
    """The dashboard asks the library; this one does not answer (the page says so, and shows the rest)."""

    def health(self) -> None:
        raise RuntimeError("not asked in this test")

    capacity = health


def panel(html: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r'data-buffer="(\w+)" data-bytes="(\d+)"', html)}


def stage(factory, paths_sizes, *, pinned_for_s: int | None, state=FileState.STAGED) -> None:
    rows = [
        queued(p, "T1", n * 100 * MB, EPOCH, size=size, state=state)
        for n, (p, size) in enumerate(paths_sizes)
    ]
    add_request(factory, rows, EPOCH)
    with transaction(factory) as session:
        ids = [r.id for r in rows]
        if state is FileState.STAGED:
            session.execute(update(QueuedFileRow).where(QueuedFileRow.id.in_(ids)).values(disk_used_at=EPOCH))
            session.execute(
                update(RequestFile)
                .where(RequestFile.file_id.in_(ids))
                .values(
                    state="COMPLETED",
                    pin_until_s=None if pinned_for_s is None else epoch_s(EPOCH) + pinned_for_s,
                )
            )


def render(factory, limits: BufferLimits | None) -> str:
    with factory() as session:
        view = build_dashboard(
            session, OfflineAdapter(), EPOCH + timedelta(seconds=10), None, site="t", buffer=limits
        )  # type: ignore[arg-type]
    return render_dashboard(view, refresh_s=60)


def test_the_panel_shows_the_buffer_as_the_database_holds_it(session_factory):
    stage(session_factory, [("/a", 30 * MB), ("/b", 20 * MB)], pinned_for_s=3600)  # pinned
    stage(session_factory, [("/c", 10 * MB)], pinned_for_s=5)  # its pin ended
    stage(session_factory, [("/d", 15 * MB)], pinned_for_s=None, state=FileState.SUBMITTED)  # in flight
    html = render(session_factory, LIMITS)

    assert panel(html) == {
        "on_disk": 60 * MB,
        "pinned": 50 * MB,
        "evictable": 10 * MB,
        "reserved": 15 * MB,
        "free": 90 * MB - 75 * MB,
        "room": 90 * MB - 65 * MB,
    }
    assert "3 files" in html
    assert 'id="buffer-full"' not in html


def test_the_panel_says_when_queued_work_waits_for_space(session_factory):
    stage(session_factory, [("/a", 80 * MB)], pinned_for_s=3600)
    stage(session_factory, [("/q", 20 * MB)], pinned_for_s=None, state=FileState.QUEUED)
    html = render(session_factory, LIMITS)
    assert panel(html)["room"] == 10 * MB
    assert 'id="buffer-full"' in html and "buffer_full" in html


def test_the_panel_gives_sizes_in_decimal_units_as_the_rest_of_carousel(session_factory):
    # the default capacity, 4 GiB, reads 4.29 GB: the same units as the reports and the library's description
    stage(session_factory, [("/a", 1_260_000_000)], pinned_for_s=3600)
    html = render(session_factory, BufferLimits(4 * 2**30, high_watermark=0.9, low_watermark=0.5))
    assert "<small>4.29 GB; admission fills it" in html
    assert re.search(r'data-buffer="on_disk" data-bytes="1260000000">1.26 GB<', html), html
    assert "GiB" not in html


def test_no_panel_with_the_buffer_off(session_factory):
    assert 'id="buffer"' not in render(session_factory, None)
