"""A site of several libraries as the API and the lookups see it (docs/decisions.md §17): one lookup across
every library, each path answered with the copy the cost model serves soonest, and the site's health and
capacity together.

It is not a library of its own: batches, cancels and events belong to each library's adapter (the scheduler
runs one planning pass per library), so `submit`, `cancel`, `poll_events` and `set_sink` refuse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

from carousel.domain.libraries import CopyEstimate, copy_wait_s, soonest_copy
from carousel.domain.planning import LibraryCosts
from hsm_adapters.base import (
    Batch,
    CancelResult,
    Capacity,
    Event,
    EventSink,
    Health,
    HsmAdapter,
    LookupResult,
    NotOnTape,
    OnTape,
    Unknown,
)

Backlog = Callable[[], Mapping[str, int]]  # bytes queued per library now (its tape queues)


def _no_backlog() -> Mapping[str, int]:
    return {}


class Site:
    name = "site"

    def __init__(self, libraries: Mapping[str, HsmAdapter], *, backlog: Backlog = _no_backlog) -> None:
        if not libraries:
            raise ValueError("a site has at least one library")
        self.libraries = dict(libraries)  # in the settings' order: a tie goes to the first named
        self.backlog = backlog

    # --- lookup -------------------------------------------------------------------------------------------

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        """Each library is asked for every path. A path on tape in one library or more: that library's answer
        (the soonest served, by each library's costs, drives and the bytes queued there), naming it. On tape
        nowhere: Unknown when a library could not answer (ask again later), else NotOnTape."""
        answers = {name: self._answers(name, adapter, paths) for name, adapter in self.libraries.items()}
        queued = self.backlog() if len(self.libraries) > 1 else {}
        return [self._chosen(n, path, answers, queued) for n, path in enumerate(paths)]

    def other_copies(
        self, paths: Sequence[str], unreadable: Collection[tuple[str, str]]
    ) -> list[OnTape | Unknown | None]:
        """For each path, the soonest copy on a tape not in `unreadable` ((library, tape): a broken tape),
        naming its library; Unknown when no such copy was found and a library could not answer (ask again);
        None when there is none."""
        answers = {name: self._answers(name, adapter, paths) for name, adapter in self.libraries.items()}
        queued = self.backlog() if len(self.libraries) > 1 else {}
        chosen: list[OnTape | Unknown | None] = []
        for n, path in enumerate(paths):
            copies = {
                name: a
                for name, answer in answers.items()
                if isinstance(a := answer[n], OnTape) and (name, a.tape) not in unreadable
            }
            if copies:
                name = soonest_copy([self._estimate(name, copy, queued) for name, copy in copies.items()])
                chosen.append(dataclasses.replace(copies[name], library=name))
                continue
            unknown = [a.reason for answer in answers.values() if isinstance(a := answer[n], Unknown)]
            chosen.append(Unknown(path, "; ".join(unknown)) if unknown else None)
        return chosen

    def _answers(self, name: str, adapter: HsmAdapter, paths: Sequence[str]) -> list[LookupResult]:
        try:
            results = adapter.lookup(paths)
        except Exception as exc:
            return [Unknown(path, f"library {name} did not answer: {exc}") for path in paths]
        if len(results) != len(paths):
            return [Unknown(path, f"library {name} answered for other paths") for path in paths]
        return results

    def _chosen(
        self, n: int, path: str, answers: Mapping[str, list[LookupResult]], queued: Mapping[str, int]
    ) -> LookupResult:
        copies = {name: a[n] for name, a in answers.items() if isinstance(a[n], OnTape)}
        if copies:
            name = soonest_copy([self._estimate(name, copy, queued) for name, copy in copies.items()])
            copy = copies[name]
            assert isinstance(copy, OnTape)
            return dataclasses.replace(copy, library=name)
        unknown = [a for answer in answers.values() if isinstance(a := answer[n], Unknown)]
        if unknown:
            return Unknown(path, "; ".join(u.reason for u in unknown))
        absent = [a for answer in answers.values() if isinstance(a := answer[n], NotOnTape)]
        on_disk = any(a.on_disk for a in absent)
        reasons = "; ".join(a.reason for a in absent)
        return NotOnTape(path, reasons if len(self.libraries) == 1 else f"in no library: {reasons}", on_disk)

    def _estimate(self, name: str, copy: OnTape | LookupResult, queued: Mapping[str, int]) -> CopyEstimate:
        assert isinstance(copy, OnTape)
        if len(self.libraries) == 1:
            return CopyEstimate(name, 0.0)
        adapter = self.libraries[name]
        try:
            drives = adapter.capacity().drives_total
        except Exception:
            drives = 0  # a library that does not answer serves nothing soon
        wait = copy_wait_s(
            _costs(adapter),
            position_bytes=copy.position_bytes,
            size_bytes=copy.size_bytes,
            queued_bytes=queued.get(name, 0),
            drives=drives,
        )
        return CopyEstimate(name, wait if drives > 0 else float("inf"))

    # --- the site together --------------------------------------------------------------------------------

    def health(self) -> Health:
        """ONLINE when every library is; OFFLINE when none can take work; DEGRADED between."""
        states = [_health(adapter) for adapter in self.libraries.values()]
        if all(s is Health.ONLINE for s in states):
            return Health.ONLINE
        if all(s is Health.OFFLINE for s in states):
            return Health.OFFLINE
        return Health.DEGRADED

    def capacity(self) -> Capacity:
        """Drives and queue slots of the site's libraries added up (a library that does not answer: none)."""
        total = free = 0
        slots: dict[str, int] = {}
        mounted: list[str] = []
        for adapter in self.libraries.values():
            try:
                capacity = adapter.capacity()
            except Exception:
                continue
            total += capacity.drives_total
            free += capacity.drives_free
            for service_class, n in capacity.queue_slots.items():
                slots[service_class] = slots.get(service_class, 0) + n
            mounted.extend(capacity.mounted_tapes)
        return Capacity(total, free, slots, tuple(mounted))

    def evict(self, paths: Sequence[str]) -> None:
        for adapter in self.libraries.values():
            adapter.evict(paths)

    def close(self) -> None:
        for adapter in self.libraries.values():
            adapter.close()

    # --- a library's own ----------------------------------------------------------------------------------

    def submit(self, batch: Batch) -> None:
        raise TypeError("a site takes no batches: each library's adapter takes its own")

    def cancel(self, file_keys: Sequence[str]) -> CancelResult:
        raise TypeError("a site cancels nothing: each library's adapter cancels its own files")

    def poll_events(self, limit: int | None = None) -> list[Event]:
        raise TypeError("a site has no events: each library's adapter has its own")

    def set_sink(self, sink: EventSink | None) -> None:
        raise TypeError("a site has no events: each library's adapter has its own")


def _costs(adapter: HsmAdapter) -> LibraryCosts | None:
    publish = getattr(adapter, "library_costs", None)
    return publish() if callable(publish) else None


def _health(adapter: HsmAdapter) -> Health:
    try:
        return adapter.health()
    except Exception:
        return Health.OFFLINE
