"""Report windows: buckets cut at whole UTC hours and days, spans shared between buckets, bad input named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import InvalidInput
from carousel.reports.window import MAX_BUCKETS, Bucket, make_window, spread

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NAIVE = NOW.replace(hour=10, tzinfo=None)


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, 1, hour, minute, second, tzinfo=UTC)


def test_buckets_are_whole_hours_cut_to_the_window() -> None:
    window = make_window(at(10, 30), at(12, 15), Bucket.HOUR, NOW)
    assert window.bucket_bounds() == [(at(10, 30), at(11)), (at(11), at(12)), (at(12), at(12, 15))]
    assert window.buckets == 3
    assert window.row_of(int(at(11, 5).timestamp()) // 3600) == 1


def test_day_buckets_are_utc_days() -> None:
    window = make_window(at(10) - timedelta(days=2), at(10), Bucket.DAY, NOW)
    starts = [start for start, _ in window.bucket_bounds()]
    assert starts[1:] == [datetime(2026, 2, 28, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)]
    assert window.buckets == 3


def test_defaults_are_the_day_before_now() -> None:
    window = make_window(None, None, "hour", NOW)
    assert (window.since, window.until) == (NOW - timedelta(days=1), NOW)
    assert window.buckets == 24


@pytest.mark.parametrize(
    ("since", "until", "bucket", "field", "says"),
    [
        (NAIVE, None, "hour", "since", "time zone"),
        (None, NAIVE, "hour", "until", "time zone"),
        (at(11), at(10), "hour", "since", "must be before"),
        (at(10), at(10), "hour", "since", "must be before"),
        (at(10) - timedelta(hours=MAX_BUCKETS + 1), at(10), "hour", "since", "larger bucket"),
        (None, None, "week", "bucket", "hour, day"),
    ],
)
def test_bad_windows_name_the_parameter(since, until, bucket, field: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        make_window(since, until, bucket, NOW)
    assert caught.value.field == field
    assert says in caught.value.detail


def test_a_zone_other_than_utc_is_converted() -> None:
    paris = at(11).astimezone(ZoneInfo("Europe/Paris"))
    window = make_window(paris, None, Bucket.HOUR, NOW)
    assert window.since == at(11) and window.since.tzinfo is UTC


@given(
    start=st.floats(min_value=0, max_value=20_000),
    length=st.floats(min_value=0.001, max_value=20_000),
    edges=st.lists(st.floats(min_value=0, max_value=20_000), min_size=2, max_size=8, unique=True),
)
def test_a_span_is_shared_exactly_between_the_buckets_it_overlaps(start: float, length: float, edges) -> None:
    edges = sorted(edges)
    end = start + length
    shares = list(spread(start, end, edges))
    inside = max(min(end, edges[-1]) - max(start, edges[0]), 0.0)
    assert sum(s for _, s in shares) == pytest.approx(inside, abs=1e-6)
    assert all(0 <= row < len(edges) - 1 and s > 0 for row, s in shares)
    assert [row for row, _ in shares] == sorted({row for row, _ in shares})
