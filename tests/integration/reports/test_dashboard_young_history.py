"""The dashboard over a history minutes old, on both databases: the average rate is taken over the time the
history covers and says so, and a read that took a fraction of a second shows that fraction."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import build_dashboard
from carousel.db.engine import transaction
from carousel.db.models import Mount, Recall
from carousel.domain.states import FileState
from tests.conftest import EPOCH
from tests.integration.reports.test_dashboard_buffer import OfflineAdapter
from tests.integration.scheduler.rows import add_request, queued

BEGAN = EPOCH  # the first mount: the start of the recorded history
NOW = BEGAN + timedelta(minutes=12)
READ = 83_700_000


def record_one_read(factory: sessionmaker[Session], *, read_s: float) -> None:
    """One tape mounted at BEGAN for ten minutes, one file of READ bytes read from it in `read_s`."""
    row = queued("/young/1", "T1", 0, BEGAN, size=READ, state=FileState.STAGED)
    add_request(factory, [row], BEGAN)
    started = BEGAN + timedelta(minutes=1)
    with transaction(factory) as session:
        session.add(
            Mount(
                tape="T1", drive="d1", mounted_at=BEGAN, unmounted_at=BEGAN + timedelta(minutes=10), files=1
            )
        )
        session.add(
            Recall(
                file_id=row.id,
                batch_key="b1",
                tape="T1",
                drive="d1",
                submitted_at=BEGAN,
                started_at=started,
                finished_at=started + timedelta(seconds=read_s),
                outcome="STAGED",
                bytes=READ,
            )
        )


def render(factory: sessionmaker[Session]) -> str:
    with factory() as session:
        view = build_dashboard(session, OfflineAdapter(), NOW, None, site="t")  # type: ignore[arg-type]
    return render_dashboard(view, refresh_s=60)


def test_the_average_rate_is_over_the_history_it_covers(session_factory: sessionmaker[Session]) -> None:
    record_one_read(session_factory, read_s=30)
    html = render(session_factory)
    # 83.7 MB over the 12 minutes since the first mount, not over a day (969 B/s)
    assert f"{READ / 720 / 1000:.0f} kB/s on average over the last 12 min 00 s<" in html
    assert "969 B/s" not in html


def test_a_history_older_than_the_window_averages_over_the_whole_day(
    session_factory: sessionmaker[Session],
) -> None:
    record_one_read(session_factory, read_s=30)
    with session_factory() as session:
        day_later = NOW + timedelta(days=1)
        view = build_dashboard(session, OfflineAdapter(), day_later, None, site="t")  # type: ignore[arg-type]
    assert view.throughput.whole_window
    assert "on average over the last 24 h<" in render_dashboard(view, refresh_s=60)


def test_a_read_of_a_fraction_of_a_second_shows_that_fraction(session_factory: sessionmaker[Session]) -> None:
    record_one_read(session_factory, read_s=0.4)
    html = render(session_factory)
    drive_row = html[html.index('data-drive="d1"') :]
    drive_row = drive_row[: drive_row.index("</tr>")]
    # mounted, reading, efficiency: "0 s" reading beside 0.1 % was the old page's
    assert re.findall(r"<td>([^<]*)</td>", drive_row)[-3:] == ["10 min 00 s", "0.4 s", "0.1 %"]
