"""The per-tape demand objects a policy plans from, built from the tape queue rows of a snapshot.

A snapshot of 20,000 tapes is some 80,000 frozen objects (a TapeDemand per tape, a GroupDemand per group);
building them all again every cycle took a quarter of the cycle, and their turnover woke Python's full
garbage collection every few cycles (seconds over a heap of that size). Most tapes do not change from one
cycle to the next (a cycle claims a few tapes, intake and completion touch a few more), so an assembly keeps
each tape's objects while its rows are the same and builds anew only those of the tapes whose rows changed.
The rows are compared in full: whoever changed them (this cycle's fold, an outlook's, a migration), a tape
with different rows gets new objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from carousel.db.models import TapeQueueKind
from carousel.domain.planning import GroupDemand, TapeDemand, TapeInFlight
from carousel.domain.queue import QueueDemand

Row = tuple[Any, ...]  # tape, kind, class of service, group, files, bytes, oldest, priority, retries


def _utc(value: datetime | None) -> datetime | None:
    """Aware UTC, as carousel.db.models.UtcDateTime reads it: the rows come as the driver gives them (aware
    in the session's zone on PostgreSQL, naive UTC on SQLite), so that unchanged tapes cost no conversion."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class _Tape:
    rows: tuple[Row, ...]
    demand: TapeDemand | None
    in_flight: TapeInFlight | None


class DemandAssembly:
    """Builds QueueDemand from rows, keeping each tape's objects from the last call while its rows are the
    same. Each call replaces what it keeps in one assignment, so calls from two threads stay right (each
    builds from what the last finished call left)."""

    def __init__(self) -> None:
        self._kept: dict[str, _Tape] = {}

    def assemble(self, rows: Iterable[Row]) -> QueueDemand:
        """Rows sorted by tape: one TapeDemand per tape with queued files and one TapeInFlight per tape with
        files in flight."""
        kept = self._kept
        now_kept: dict[str, _Tape] = {}
        tapes: list[TapeDemand] = []
        flying: list[TapeInFlight] = []
        for tape, parts in groupby(rows, key=itemgetter(0)):
            its_rows = tuple(parts)
            seen = kept.get(tape)
            if seen is None or seen.rows != its_rows:
                seen = _Tape(its_rows, *tape_objects(tape, its_rows))
            now_kept[tape] = seen
            if seen.demand is not None:
                tapes.append(seen.demand)
            if seen.in_flight is not None:
                flying.append(seen.in_flight)
        self._kept = now_kept
        tapes.sort(key=lambda t: (t.oldest, t.tape))
        return QueueDemand(
            tapes=tuple(tapes),
            in_flight=sum(t.files for t in flying),
            in_flight_tapes=tuple(sorted(flying, key=lambda t: t.tape)),
        )


def tape_objects(tape: str, rows: Iterable[Row]) -> tuple[TapeDemand | None, TapeInFlight | None]:
    """One tape's rows: its queued work (None without queued files) and its files in flight (None without)."""
    flying: TapeInFlight | None = None
    demanded: TapeDemand | None = None
    queued: dict[str, list[Any]] = {}  # group -> [files, bytes, oldest, priority]
    in_flight: dict[str, list[int]] = {}  # group -> [files, bytes]
    classes: dict[str, int] = {}
    retries = 0
    for _, kind, service_class, grp, count, size, oldest, priority, retried in rows:
        if kind != TapeQueueKind.QUEUED:
            held = in_flight.setdefault(grp, [0, 0])
            held[0] += count
            held[1] += int(size or 0)
            continue
        # a tape's files share its class of service; should they not, the busiest class speaks for it
        classes[service_class] = classes.get(service_class, 0) + count
        retries += int(retried or 0)
        seen = queued.get(grp)
        if seen is None:
            queued[grp] = [count, int(size or 0), oldest, priority]
        else:
            seen[0] += count
            seen[1] += int(size or 0)
            seen[2] = min(seen[2], oldest)
            seen[3] = max(seen[3], priority)
    files_in_flight = sum(n for n, _ in in_flight.values())
    if in_flight:
        groups = tuple(GroupDemand(g, n, b) for g, (n, b) in sorted(in_flight.items()))
        flying = TapeInFlight(tape=tape, files=files_in_flight, groups=groups)
    if queued:
        demand = tuple(
            GroupDemand(g, n, b, oldest=_utc(o), max_priority=p) for g, (n, b, o, p) in sorted(queued.items())
        )
        demanded = TapeDemand(
            tape=tape,
            files=sum(d.files for d in demand),
            bytes=sum(d.bytes for d in demand),
            oldest=min(d.oldest for d in demand if d.oldest is not None),
            max_priority=max(d.max_priority for d in demand),
            service_class=min(classes, key=lambda c: (-classes[c], c)),
            groups=demand,
            in_flight=files_in_flight,
            retries=retries,
        )
    return demanded, flying
