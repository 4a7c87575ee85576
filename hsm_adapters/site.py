"""A site of several libraries as the API and the lookups see it (docs/decisions.md §17): one lookup across
every library, each path answered with the copy on the least held tape that the cost model serves soonest,
and the site's health and capacity together.

It is not a library of its own: batches, cancels and events belong to each library's adapter (the scheduler
runs one planning pass per library), so `submit`, `cancel`, `poll_events` and `set_sink` refuse; so does
`evict`: an evicted copy is told to the library it was read from, and only to it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from carousel.domain.libraries import DEFAULT_LIBRARY, CopyEstimate, copy_wait_s, soonest_copy
from carousel.domain.media import TapeState
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
# the tapes an operator (or the service) holds now, by (library, tape): disabled or broken
TapeStates = Callable[[], Mapping[tuple[str, str], TapeState]]


def _no_backlog() -> Mapping[str, int]:
    return {}


def _no_tape_states() -> Mapping[tuple[str, str], TapeState]:
    return {}


@dataclass(frozen=True, slots=True)
class _Weighing:
    """What one lookup weighs copies by, each read at most once and only when a path has copies to choose
    between: the bytes queued per library, the tapes held, and each library's costs and drives."""

    queued: Backlog
    held: TapeStates
    library: Callable[[str], tuple[LibraryCosts | None, int]]


@dataclass(frozen=True, slots=True)
class BrokenCopies:
    """A path whose every copy is on a broken tape: (library, tape) of each, in the settings' order."""

    path: str
    copies: tuple[tuple[str, str], ...]


class Site:
    name = "site"

    def __init__(
        self,
        libraries: Mapping[str, HsmAdapter],
        *,
        backlog: Backlog = _no_backlog,
        tape_states: TapeStates = _no_tape_states,
    ) -> None:
        if not libraries:
            raise ValueError("a site has at least one library")
        self.libraries = dict(libraries)  # in the settings' order: a tie goes to the first named
        self.backlog = backlog
        self.tape_states = tape_states

    # --- lookup -------------------------------------------------------------------------------------------

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        """Each library is asked for every path. A path on tape in one library or more: that library's answer,
        naming it; with copies in several, the one `soonest_copy` chooses (a copy on an active tape before
        one on a disabled tape before one on a broken tape, then the soonest served by each library's costs,
        drives and the bytes queued there). Every copy on a broken tape: the soonest of them, as one library's
        answer would be (the leader's next cycle fails the file with the tape's reason). On tape nowhere:
        Unknown when a library could not answer (ask again later), else NotOnTape. The tape states and the
        bytes queued are read once per lookup, and only when some path has copies in several libraries."""
        answers = {name: self._answers(name, adapter, paths) for name, adapter in self.libraries.items()}
        weighing = self._weighing(self.tape_states)
        return [self._chosen(n, path, answers, weighing) for n, path in enumerate(paths)]

    def other_copies(
        self, paths: Sequence[str], unreadable: Collection[tuple[str, str]]
    ) -> list[OnTape | Unknown | BrokenCopies | None]:
        """For each path, the copy `soonest_copy` chooses among those on a tape not in `unreadable` ((library,
        tape): a broken tape) nor broken by the site's tape states, naming its library; Unknown when no such
        copy was found and a library could not answer (ask again; each such library named with what it
        said); BrokenCopies when every copy is on a
        broken tape (each named, so the file's failure can say why in every library); None when there is no
        copy at all."""
        answers = {name: self._answers(name, adapter, paths) for name, adapter in self.libraries.items()}
        unreadable_now = dict.fromkeys(unreadable, TapeState.BROKEN)
        weighing = self._weighing(lambda: {**self.tape_states(), **unreadable_now})
        chosen: list[OnTape | Unknown | BrokenCopies | None] = []
        for n, path in enumerate(paths):
            copies = {name: a for name, answer in answers.items() if isinstance(a := answer[n], OnTape)}
            if copies:
                copy, estimate = self._soonest(copies, weighing)
                if not estimate.broken:
                    chosen.append(copy)
                    continue
            unknown = {name: a for name, answer in answers.items() if isinstance(a := answer[n], Unknown)}
            if unknown:
                chosen.append(Unknown(path, "no other copy found yet" + _named(unknown)))
            else:
                broken = tuple((name, copy.tape) for name, copy in copies.items())
                chosen.append(BrokenCopies(path, broken) if broken else None)
        return chosen

    def _answers(self, name: str, adapter: HsmAdapter, paths: Sequence[str]) -> list[LookupResult]:
        try:
            results = adapter.lookup(paths)
        except Exception as exc:
            return [Unknown(path, f"the library did not answer: {exc}") for path in paths]
        if len(results) != len(paths):
            return [Unknown(path, "the library answered for other paths") for path in paths]
        return results

    def _chosen(
        self,
        n: int,
        path: str,
        answers: Mapping[str, list[LookupResult]],
        weighing: _Weighing,
    ) -> LookupResult:
        copies = {name: a for name, answer in answers.items() if isinstance(a := answer[n], OnTape)}
        if len(copies) == 1:  # nothing to choose between: no state nor backlog is read for it
            name, copy = next(iter(copies.items()))
            return dataclasses.replace(copy, library=name)
        if copies:
            return self._soonest(copies, weighing)[0]
        # every library answered NotOnTape or Unknown
        said = {
            name: a for name, answer in answers.items() if isinstance(a := answer[n], NotOnTape | Unknown)
        }
        if len(self.libraries) == 1:
            return next(iter(said.values()))  # the library's own answer, as it gave it
        if any(isinstance(a, Unknown) for a in said.values()):
            return Unknown(path, _not_found_yet(said))
        absent = {name: a for name, a in said.items() if isinstance(a, NotOnTape)}
        return NotOnTape(path, _in_no_library(absent), any(a.on_disk for a in absent.values()))

    def _weighing(self, held: TapeStates) -> _Weighing:
        return _Weighing(functools.cache(self.backlog), functools.cache(held), functools.cache(self._library))

    def _library(self, name: str) -> tuple[LibraryCosts | None, int]:
        """A library's published costs and drives in service (0 when it does not answer: it serves nothing
        soon)."""
        adapter = self.libraries[name]
        try:
            drives = adapter.capacity().drives_total
        except Exception:
            drives = 0
        return _costs(adapter), drives

    def _soonest(self, copies: Mapping[str, OnTape], weighing: _Weighing) -> tuple[OnTape, CopyEstimate]:
        """The copy `soonest_copy` chooses, naming its library, with its estimate."""
        chosen = soonest_copy([self._estimate(name, copy, weighing) for name, copy in copies.items()])
        return dataclasses.replace(copies[chosen.library], library=chosen.library), chosen

    def _estimate(self, name: str, copy: OnTape, weighing: _Weighing) -> CopyEstimate:
        state = weighing.held().get((name, copy.tape), TapeState.ACTIVE)
        disabled, broken = state is TapeState.DISABLED, state is TapeState.BROKEN
        if len(self.libraries) == 1:
            return CopyEstimate(name, 0.0, disabled=disabled, broken=broken)
        costs, drives = weighing.library(name)
        wait = copy_wait_s(
            costs,
            position_bytes=copy.position_bytes,
            size_bytes=copy.size_bytes,
            queued_bytes=weighing.queued().get(name, 0),
            drives=drives,
        )
        return CopyEstimate(name, wait if drives > 0 else float("inf"), disabled=disabled, broken=broken)

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

    def evict(self, paths: Sequence[str]) -> None:
        # each path is told to the library its file was read from (carousel.scheduler.eviction_notice)
        raise TypeError("a site evicts nothing: each library's adapter is told of its own evicted copies")


def _in_no_library(absent: Mapping[str, NotOnTape]) -> str:
    """Why a path is in no library, each library named with its reason: "in no library: new: …; old: …", or
    "in no library (new, old): …" when every library gave the same reason."""
    return "in no library" + _named(absent)


def _not_found_yet(said: Mapping[str, NotOnTape | Unknown]) -> str:
    """Why a path on tape in no library that answered waits to be asked again, each library named with what
    it said, a library that could not say (Unknown) as one that did not find it: "not found yet: new: the
    library is offline; old: not in the library", or "not found yet (new, old): …" when they said the same."""
    return "not found yet" + _named(said)


def _named(said: Mapping[str, NotOnTape | Unknown]) -> str:
    """Each library's reason after its name, in the settings' order; once, after every name, when alike."""
    reasons = {a.reason for a in said.values()}
    if len(reasons) == 1:
        return f" ({', '.join(said)}): {reasons.pop()}"
    return ": " + "; ".join(f"{name}: {a.reason}" for name, a in said.items())


def _costs(adapter: HsmAdapter) -> LibraryCosts | None:
    publish = getattr(adapter, "library_costs", None)
    return publish() if callable(publish) else None


def _health(adapter: HsmAdapter) -> Health:
    try:
        return adapter.health()
    except Exception:
        return Health.OFFLINE


def site_adapters(adapter: HsmAdapter) -> dict[str, HsmAdapter]:
    """The libraries behind the adapter a process holds: a site's, or the one library `default`."""
    if isinstance(adapter, Site):
        return dict(adapter.libraries)
    return {DEFAULT_LIBRARY: adapter}
