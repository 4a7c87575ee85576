"""The per-tape demand objects a policy plans from, kept from one snapshot to the next.

A snapshot of 20,000 tapes is 60,000 tape-queue rows and some 80,000 frozen objects (a TapeDemand per tape, a
GroupDemand per group). Reading them all and building them all again every cycle took most of the cycle,
and their turnover woke Python's full garbage collection every few cycles (seconds over a heap of that
size). Most tapes do not change from one cycle to the next (a cycle claims a few tapes, intake and
completion touch a few more), so an assembly keeps a copy of the tape queues and the objects built from it:
the snapshot applies its own fold's changed rows to the copy (the fold returns them) and builds the objects
of those tapes only. Folds take the tape queues' version one at a time (carousel.db.tape_queue_queries); when
the version shows that someone else folded since (an outlook, a dry run, another scheduler), the table is
read again and compared with the copy, tape by tape. On a site of several libraries (docs/decisions.md §17) an
assembly is one library's: it keeps that library's rows only (None: every library's, a tape's rows of every
library together, as the outlook of a site sees them). A fold takes every library's deltas, so the libraries'
assemblies of one site share each fold (`SiteAssemblies`): else each library, snapshot in turn, would find
the version moved by the one before it and read the whole table again every cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime
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


Objects = tuple[TapeDemand | None, TapeInFlight | None]
Place = tuple[str, str, str, str]  # library, group, class of service, kind: a row's place within its tape


FoldedRows = dict[tuple[str, str, str, str, str], Row | None]  # library, tape, group, class, kind -> row


class SiteAssemblies:
    """The assemblies of one site's libraries, which its cycle snapshots in turn: the rows one library's
    snapshot folded bring every other copy that was as current up to date as well."""

    def __init__(self) -> None:
        self._members: list[DemandAssembly] = []

    def join(self, assembly: DemandAssembly) -> None:
        self._members.append(assembly)

    def share(self, folder: DemandAssembly, rows: FoldedRows, before: int, after: int) -> None:
        for member in self._members:
            if member is not folder and member.version == before:
                member.apply(rows, after)

    def forget(self) -> None:
        # a failed snapshot's fold may have been shared before its transaction rolled back
        for member in self._members:
            member.version = None


class DemandAssembly:
    """A copy of the tape queues (as of `version`) and the demand objects built from it. A snapshot brings
    the copy up to date with its own fold, or reads the table again when someone else folded since
    (carousel.db.queue_queries.read_demand), then builds the objects of the tapes that changed only.
    For one thread at a time (each store has its own; the lock guards against misuse). `site`: the
    assemblies of the site's other libraries, which share their folds with this one and this one's with
    them."""

    def __init__(self, library: str | None = None, site: SiteAssemblies | None = None) -> None:
        self.library = library  # whose rows (None: every library's)
        self.version: int | None = None  # None: no copy (never read, or forgotten)
        self.reloads = 0  # times the whole table was read
        self._rows: dict[str, dict[Place, Row]] = {}  # tape -> its rows, as read_demand reads them
        self._objects: dict[str, Objects] = {}
        self._substituted: set[str] = set()  # tapes whose objects were built from other rows (backing off)
        self._stale: set[str] = set()  # tapes whose rows changed since their objects were built
        self._lock = threading.Lock()
        self._site = site
        if site is not None:
            site.join(self)

    def forget(self) -> None:
        """The copy may not match the table any more (the snapshot's transaction failed): read it again."""
        if self._site is not None:
            self._site.forget()
        self.version = None

    def share(self, rows: FoldedRows, before: int, after: int) -> None:
        """This snapshot's fold, for the site's other assemblies that were at `before`."""
        if self._site is not None:
            self._site.share(self, rows, before, after)

    def apply(self, rows: FoldedRows, version: int) -> set[str]:
        """A fold (the rows it changed by library, tape, group, class and kind; None: deleted); returns the
        tapes changed (of this assembly's library)."""
        changed: set[str] = set()
        with self._lock:
            for (library, tape, grp, service_class, kind), row in rows.items():
                if self.library is not None and library != self.library:
                    continue
                changed.add(tape)
                its = self._rows.setdefault(tape, {})
                if row is None:
                    its.pop((library, grp, service_class, kind), None)
                else:
                    its[(library, grp, service_class, kind)] = row
                if not its:
                    del self._rows[tape]
            self.version = version
            self._stale |= changed
            return changed

    def reload(self, rows: Iterable[tuple[str, Row]], version: int) -> set[str]:
        """The whole table (this assembly's library's rows, each with its library), read again; returns the
        tapes whose rows differ from the copy's."""
        fresh: dict[str, dict[Place, Row]] = {}
        for library, row in rows:
            fresh.setdefault(row[0], {})[(library, row[3], row[2], row[1])] = row
        with self._lock:
            old = self._rows
            changed = {tape for tape, its in fresh.items() if old.get(tape) != its}
            changed.update(tape for tape in old if tape not in fresh)
            self._rows = fresh
            self.version = version
            self.reloads += 1
            self._stale |= changed
            return changed

    def assemble(self, changed: set[str], substitutes: dict[str, list[Row]] | None = None) -> QueueDemand:
        """The demand over the copy, the objects of the `changed` tapes (and of those a shared fold changed)
        built again. `substitutes`: rows that stand for a tape's queued rows in this snapshot only (its files
        backing off, read from `files`)."""
        substitutes = substitutes or {}
        with self._lock:
            for tape in changed | self._stale | set(substitutes) | self._substituted:
                rows = self._rows_of(tape, substitutes.get(tape))
                if rows:
                    self._objects[tape] = tape_objects(tape, rows)
                else:
                    self._objects.pop(tape, None)
            self._substituted = set(substitutes)
            self._stale = set()
            tapes = [demand for demand, _ in self._objects.values() if demand is not None]
            flying = [held for _, held in self._objects.values() if held is not None]
        tapes.sort(key=lambda t: (t.oldest, t.tape))
        return QueueDemand(
            tapes=tuple(tapes),
            in_flight=sum(t.files for t in flying),
            in_flight_tapes=tuple(sorted(flying, key=lambda t: t.tape)),
        )

    def _rows_of(self, tape: str, substitute: list[Row] | None) -> list[Row]:
        """A tape's rows with files (a row below zero waits for arrivals another fold holds)."""
        rows = [
            row
            for (_, _, _, kind), row in self._rows.get(tape, {}).items()
            if row[4] > 0 and (substitute is None or kind != TapeQueueKind.QUEUED)
        ]
        return rows + (substitute or [])


def tape_objects(tape: str, rows: Iterable[Row]) -> tuple[TapeDemand | None, TapeInFlight | None]:
    """One tape's rows: its queued work (None without queued files) and its files in flight (None without)."""
    flying: TapeInFlight | None = None
    demanded: TapeDemand | None = None
    queued: dict[str, list[Any]] = {}  # group -> [files, bytes, oldest, priority]
    in_flight: dict[str, list[int]] = {}  # group -> [files, bytes]
    classes: dict[str, int] = {}
    retries = 0
    for _, kind, service_class, grp, count, size, read_oldest, priority, retried in rows:
        if kind != TapeQueueKind.QUEUED:
            held = in_flight.setdefault(grp, [0, 0])
            held[0] += count
            held[1] += int(size or 0)
            continue
        # a tape's files share its class of service; should they not, the busiest class speaks for it
        classes[service_class] = classes.get(service_class, 0) + count
        retries += int(retried or 0)
        # rows come from the fold, the table and `files`, as each driver gives them
        oldest = _utc(read_oldest)
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
            GroupDemand(g, n, b, oldest=o, max_priority=p) for g, (n, b, o, p) in sorted(queued.items())
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
