"""The outlook of a site of several libraries (docs/decisions.md §17): each library projected on its own
drives, cost figures and queue (its tapes only: a tape ID in two libraries is two tapes), then read together.
The disk buffer is the site's: the libraries share its room in the cycle's order (`project_snapshots`).

A request's ETA is the latest of its libraries' ETAs, its position the smallest of its libraries' (each
counted in its own library's files), and each waiting reason names the library of the files it counts. A site
of one library is projected from its own queue and answers as before. Files whose row names a library the
settings no longer name wait apart, naming it (`library_not_in_settings`): no cycle reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.domain.buffer import after_claims
from carousel.domain.clock import Clock
from carousel.domain.libraries import not_in_settings_words
from carousel.domain.planning import Plan, Snapshot
from carousel.domain.queue import RequestWork
from carousel.outlook.projection import Projection, project
from carousel.outlook.request_outlook import (
    LIBRARY_NOT_IN_SETTINGS,
    LibraryOutlook,
    RequestOutlook,
    WaitReason,
    absent_libraries_note,
    request_outlook,
)
from carousel.scheduler.live_snapshot import live_buffer, live_queue_store, live_snapshot
from carousel.scheduler.site_cycle import site_weights
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import site_adapters
from policies.base import Policy

_NONE_PLACED = "none of its files is in the outlook yet"


@dataclass(frozen=True, slots=True)
class SiteProjection:
    """Each library's projection, in the settings' order; `now`: the earliest of their snapshots."""

    now: datetime
    libraries: Mapping[str, Projection]

    @property
    def tapes(self) -> int:
        """Tapes with work, each library's counted apart (the same tape ID in two is two tapes)."""
        return sum(len(p.tapes) for p in self.libraries.values())

    @property
    def plans(self) -> int:
        return sum(p.plans for p in self.libraries.values())

    @property
    def complete(self) -> bool:
        return all(p.complete for p in self.libraries.values())

    @property
    def drained_at(self) -> datetime | None:
        """When the last library has read the last file of the snapshot, if every library has a time."""
        times = [p.drained_at for p in self.libraries.values() if p.tapes]
        if any(t is None for t in times):
            return None
        return max((t for t in times if t is not None), default=None)

    @property
    def note(self) -> str | None:
        """Each library's note, naming the library (one library's alone, as it was)."""
        if len(self.libraries) == 1:
            return next(iter(self.libraries.values())).note
        notes = [f"library {name}: {p.note}" for name, p in self.libraries.items() if p.note is not None]
        return "; ".join(notes) or None


def site_snapshots(
    settings: Settings, session_factory: sessionmaker[Session], adapter: HsmAdapter, clock: Clock
) -> dict[str, Snapshot]:
    """Each library's live snapshot, as its cycle plans from it: its own tapes, drives, costs and health,
    usage in reference drive-seconds. A site of one library: its queue, which is the whole queue unless
    files of a library the settings no longer name wait there (its cycle reads none of them)."""
    adapters = site_adapters(adapter)
    buffer = live_buffer(settings, session_factory, adapters)
    if len(adapters) == 1:
        name, only = next(iter(adapters.items()))
        store = live_queue_store(settings, session_factory, library=name)
        return {name: live_snapshot(store, only, clock, buffer=buffer)}
    weights = site_weights(adapters)
    return {
        name: live_snapshot(
            live_queue_store(settings, session_factory, library=name, usage_weights=weights),
            own,
            clock,
            buffer=buffer,
        )
        for name, own in adapters.items()
    }


def project_snapshots(snapshots: Mapping[str, Snapshot], policy: Callable[[], Policy]) -> SiteProjection:
    """Each library's snapshot projected under a policy (`policy` makes an instance per library: a policy may
    remember what it planned).

    The libraries share one disk buffer as the site's cycle shares it: in the settings' order, each plans on
    the room the libraries before it left, since their claims reserve what their plans take before the next
    library's snapshot is read. So each library's plans at the snapshot's instant are cut to the admissible
    bytes less those the libraries before it hand over then (at most the room each had), not to the whole
    free buffer each."""
    projections: dict[str, Projection] = {}
    claimed = 0
    for name, snapshot in snapshots.items():
        own = snapshot
        if snapshot.buffer is not None and claimed:
            own = replace(snapshot, buffer=after_claims(snapshot.buffer, claimed))
        projections[name] = project(own, policy().plan)
        if own.buffer is not None:
            claimed += min(projections[name].claimed_bytes, own.buffer.admissible_bytes)
    return SiteProjection(min(p.now for p in projections.values()), projections)


def project_site(
    settings: Settings,
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    policy: Callable[[], Policy],
) -> SiteProjection:
    """The live queue projected under a policy, each library on its own snapshot."""
    return project_snapshots(site_snapshots(settings, session_factory, adapter, clock), policy)


def site_request_outlook(
    site: SiteProjection, work: RequestWork, *, submitted_at: datetime | None = None
) -> RequestOutlook:
    """The request's outlook over every library it has files in (`work.libraries`, per library);
    `submitted_at` as for `request_outlook`."""
    if len(site.libraries) == 1:
        name, projection = next(iter(site.libraries.items()))
        strays = {n: own for n, own in sorted(work.libraries.items()) if n != name and _stranded(own)}
        if not strays:  # every file is the library's, or not looked up yet: as it always was
            own = _tagged(request_outlook(projection, work, submitted_at=submitted_at), name)
            return replace(own, libraries=(LibraryOutlook(name, own),))
        others = (own for n, own in work.libraries.items() if n != name)
        readable = _with_unknown(work.libraries.get(name, RequestWork()), others)
        pending = [(name, readable)] if readable.pending else []
        per_library = tuple(
            LibraryOutlook(name, _tagged(request_outlook(projection, own, submitted_at=submitted_at), name))
            for name, own in pending
        )
        elsewhere = [_not_in_settings(site.now, n, own) for n, own in strays.items()]
        pending += list(strays.items())
    else:
        pending = [(name, own) for name, own in sorted(work.libraries.items()) if own.pending]
        per_library = tuple(
            LibraryOutlook(
                name, _tagged(request_outlook(site.libraries[name], own, submitted_at=submitted_at), name)
            )
            for name, own in pending
            if name in site.libraries
        )
        # files the site's libraries do not hold: not looked up yet (their row names the library `default`
        # until then) or of a library the settings no longer name; nothing places them
        elsewhere = [_not_in_settings(site.now, n, own) for n, own in pending if n not in site.libraries]
    outlooks = [entry.outlook for entry in per_library] + elsewhere
    etas = [o.eta for o in outlooks if o.eta is not None]
    ahead = [o.files_ahead for o in outlooks if o.files_ahead is not None]
    unplanned = sum(o.unplanned for o in outlooks)
    note = None
    absent = _only_absent_libraries(per_library, outlooks)
    if not etas and pending and absent:
        note = absent_libraries_note(absent)  # not "yet": nothing places them while the settings stay so
    elif not etas and pending:
        notes = (f"library {e.library}: {e.outlook.note}" for e in per_library if e.outlook.note is not None)
        note = next(notes, _NONE_PLACED)
    elif unplanned:
        note = f"{unplanned} file(s) not in the estimate: see waiting"
    waiting = sorted(
        (w for o in outlooks for w in o.waiting), key=lambda w: (-w.files, w.code, w.library or "")
    )
    return RequestOutlook(
        computed_at=site.now,
        files_ahead=min(ahead, default=None),
        eta=max(etas, default=None),
        rough=any(o.rough for o in outlooks),
        reading=sum(o.reading for o in outlooks),
        next_cycle=sum(o.next_cycle for o in outlooks),
        unplanned=unplanned,
        waiting=tuple(waiting),
        note=note,
        libraries=per_library,
        site_libraries=len(site.libraries),
    )


def _only_absent_libraries(
    per_library: Sequence[LibraryOutlook], outlooks: Sequence[RequestOutlook]
) -> list[str]:
    """The libraries the settings do not name that every pending file of the request waits for, when all
    of them do (none in a library of the site, none not looked up yet); else none."""
    reasons = [w for o in outlooks for w in o.waiting]
    if per_library or not reasons or any(w.code != LIBRARY_NOT_IN_SETTINGS for w in reasons):
        return []
    return sorted({w.library for w in reasons if w.library is not None})


def _stranded(work: RequestWork) -> int:
    """Files with a tape in their row's library: queued, handed over, or backing off after a failed read."""
    return sum(work.queued.values()) + sum(work.in_flight.values()) + work.retry_pending


def _with_unknown(mine: RequestWork, others: Iterable[RequestWork]) -> RequestWork:
    """One library's files with those of other libraries not looked up yet (the lookup chooses theirs)."""
    others = list(others)
    return replace(
        mine,
        tape_unknown=mine.tape_unknown + sum(w.tape_unknown for w in others),
        unknown_reason=next((w.unknown_reason for w in (mine, *others) if w.unknown_reason), None),
    )


def _not_in_settings(now: datetime, library: str, work: RequestWork) -> RequestOutlook:
    """The outlook of a request's files whose row names a library the site does not have. Those not looked
    up yet wait as any (`tape_unknown`, naming no library: the lookup chooses theirs). The others (queued,
    handed over, or backing off in a library the settings no longer name) wait for that library, which no
    cycle plans, hands work to nor hears from (each library's cycle runs its own files only): out of the
    estimate, `library_not_in_settings`, naming it."""
    unknown = replace(work, queued={}, in_flight={}, retry_pending=0, retry_due_at=None, libraries={})
    outlook = request_outlook(Projection(now, Plan(), {}), unknown)
    stranded = _stranded(work)
    if stranded == 0:
        return outlook
    reason = WaitReason(LIBRARY_NOT_IN_SETTINGS, stranded, not_in_settings_words(library), library)
    return replace(outlook, unplanned=outlook.unplanned + stranded, waiting=(reason, *outlook.waiting))


def _tagged(outlook: RequestOutlook, library: str) -> RequestOutlook:
    """The outlook with its waiting reasons naming `library`."""
    return replace(outlook, waiting=tuple(replace(w, library=library) for w in outlook.waiting))
