"""The time window of a report and its buckets.

A window is [since, until) in aware UTC. Buckets are whole UTC hours or days (aligned on the Unix epoch, so a
day bucket is a UTC calendar day); the first and last are cut to the window, so a window from 10:30 to 12:15
has the buckets [10:30, 11:00), [11:00, 12:00) and [12:00, 12:15).
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import cached_property

from carousel.domain.errors import InvalidInput

DEFAULT_SPAN = timedelta(days=1)
# A window's bounds: before the epoch there is no tape history, and a day's arithmetic past the end of
# year 9998 would overflow Python's dates.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)
MAX_BUCKETS = 2_500  # about a hundred days of hours, or seven years of days


class Bucket(StrEnum):
    HOUR = "hour"
    DAY = "day"

    @property
    def width_s(self) -> int:
        return 3_600 if self is Bucket.HOUR else 86_400


def epoch(when: datetime) -> float:
    return when.timestamp()


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass(frozen=True)
class Window:
    since: datetime
    until: datetime
    bucket: Bucket
    library: str | None = None  # one library's history (docs/decisions.md §17); None: the whole site's

    @property
    def width_s(self) -> int:
        return self.bucket.width_s

    @property
    def first_index(self) -> int:
        """The epoch bucket number (floor(t / width)) of the first bucket."""
        return math.floor(epoch(self.since) / self.width_s)

    @cached_property
    def edges(self) -> list[float]:
        """Bucket edges in epoch seconds: since, the whole hours or days in between, until."""
        start, end, width = epoch(self.since), epoch(self.until), self.width_s
        inner = range((self.first_index + 1) * width, math.ceil(end / width) * width, width)
        return [start, *(float(t) for t in inner if start < t < end), end]

    @property
    def buckets(self) -> int:
        # counted, not listed: make_window checks it before any list is built
        inner = math.ceil(epoch(self.until) / self.width_s) - 1 - self.first_index
        return max(inner, 0) + 1

    def bucket_bounds(self) -> list[tuple[datetime, datetime]]:
        edges = self.edges
        return [(from_epoch(a), from_epoch(b)) for a, b in itertools.pairwise(edges)]

    def row_of(self, epoch_bucket: int) -> int:
        """The bucket (0 first) of a time whose epoch bucket number the database computed."""
        return epoch_bucket - self.first_index

    def row_at(self, t: float) -> int | None:
        """The bucket holding epoch time t, or None outside the window."""
        edges = self.edges
        if not edges[0] <= t < edges[-1]:
            return None
        return bisect_right(edges, t) - 1


def spread(start: float, end: float, edges: list[float]) -> Iterator[tuple[int, float]]:
    """(bucket, seconds of [start, end) inside it) for each bucket the span overlaps, in order."""
    last = len(edges) - 1
    row = max(bisect_right(edges, start) - 1, 0)
    while row < last and edges[row] < end:
        overlap = min(end, edges[row + 1]) - max(start, edges[row])
        if overlap > 0:
            yield row, overlap
        row += 1


def make_window(
    since: datetime | None, until: datetime | None, bucket: Bucket | str, now: datetime
) -> Window:
    """The window a caller asked for: until defaults to now, since to a day before until. Bad input raises
    InvalidInput naming the parameter."""
    try:
        size = Bucket(bucket)
    except ValueError:
        raise InvalidInput(
            f"bucket must be one of {', '.join(b.value for b in Bucket)}", field="bucket"
        ) from None
    end = _aware(until, "until") if until is not None else now
    start = _aware(since, "since") if since is not None else end - DEFAULT_SPAN
    if start >= end:
        raise InvalidInput(
            f"since ({start.isoformat()}) must be before until ({end.isoformat()})", field="since"
        )
    window = Window(start, end, size)
    if window.buckets > MAX_BUCKETS:
        raise InvalidInput(
            f"the window holds {window.buckets} {size.value} buckets, more than {MAX_BUCKETS}: "
            "narrow it or use a larger bucket",
            field="since",
        )
    return window


def _aware(when: datetime, name: str) -> datetime:
    if when.tzinfo is None:
        raise InvalidInput(
            f"{name} needs a time zone (for example 2026-01-01T00:00:00Z): {when.isoformat()}", field=name
        )
    try:
        in_utc = when.astimezone(UTC)  # year 1 or 9999 with an offset overflows
    except OverflowError:
        in_utc = None
    if in_utc is None or not EARLIEST <= in_utc < LATEST:
        raise InvalidInput(
            f"{name} must lie between {EARLIEST.year} and {LATEST.year - 1}: {when.isoformat()}", field=name
        )
    return in_utc
