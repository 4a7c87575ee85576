"""The queue store the planning path works over: database rows in the service, memory in the replay.

Only the store differs between the two (ARCHITECTURE rule 3): the snapshot, the policy, the cut to the cycle's
budget, the claim's selection semantics and the batches handed to the library are the same code
(`carousel.scheduler.planning_path`). Each method is one transaction of the store's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from carousel.db import queue_queries as q
from carousel.db.demand_assembly import DemandAssembly, SiteAssemblies
from carousel.db.engine import transaction
from carousel.db.media_queries import held_tapes
from carousel.db.usage_queries import DEFAULT_WINDOW_S, GroupUsageLedger
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import Selection
from carousel.domain.queue import ClaimedFile, HandedOver, QueueDemand
from carousel.scheduler.collector import collector_held

# one claim: the selection, the claim key its files were stamped with, and the files in the selection's order
Claim = tuple[Selection, str, list[ClaimedFile]]


class QueueStore(Protocol):
    def demand(self, now: datetime) -> QueueDemand:
        """Per tape: due queued work and files in flight; drive time per group over the accounting window."""
        ...

    def claim(
        self,
        selections: Sequence[Selection],
        new_key: Callable[[], str],
        now: datetime,
        *,
        byte_budget: int | None = None,
    ) -> list[Claim]:
        """QUEUED -> CLAIMED for each selection in turn (one key each), in one transaction; requests with a
        claimed file have started. `byte_budget` (the disk buffer's room) bounds the bytes of all the
        selections together, hard: a selection stops at its first file that does not fit."""
        ...

    def handed_over(
        self, accepted: Sequence[HandedOver], refused: Sequence[int], now: datetime
    ) -> tuple[int, int]:
        """CLAIMED -> SUBMITTED for the accepted batches (recording each recall), CLAIMED -> QUEUED for the
        refused files, in one transaction. Returns (files submitted, files returned to the queue)."""
        ...


class DatabaseQueueStore:
    """The service's store: the scheduler's SQL (carousel.db.queue_queries), a short transaction a call.

    One library's queue (docs/decisions.md §17): its tapes and files in flight, claims that stay in it, and
    recalls recorded as its own; the usage is the site's, each library's drive time by its weight. `library`
    None (the outlook, the dry run of a site): every library's queue together."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        usage_window_s: float = DEFAULT_WINDOW_S,
        library: str | None = DEFAULT_LIBRARY,
        usage_weights: Mapping[str, float] | None = None,
        site_assemblies: SiteAssemblies | None = None,
    ) -> None:
        """`site_assemblies`: the other libraries' stores' copies of the tape queues, which share folds with
        this one's (a site cycle's libraries)."""
        self.session_factory = session_factory
        self.usage_window_s = usage_window_s
        self.library = library
        self.usage_weights = dict(usage_weights or {})
        self._usage = GroupUsageLedger()  # closed mounts read once (carousel.db.usage_queries)
        # the tape queues (of this library) as the last snapshot left them, and their objects
        self.assembly = DemandAssembly(library, site_assemblies)

    def demand(self, now: datetime) -> QueueDemand:
        try:
            with collector_held(), transaction(self.session_factory) as session:
                demand = q.read_demand(session, now, self.assembly, self.library)
                usage = self._usage(session, now, self.usage_window_s, self.usage_weights)
                held = held_tapes(session, self.library)
        except BaseException:
            self.assembly.forget()  # its copy took this transaction's fold, which did not commit
            raise
        # held tapes (disabled, broken) are not the policy's to plan: they wait, saying why
        tapes = tuple(t for t in demand.tapes if t.tape not in held)
        with_work = {t.tape for t in demand.tapes}
        waiting = {tape: words for tape, words in held.items() if tape in with_work}
        return QueueDemand(tapes, demand.in_flight, demand.in_flight_tapes, usage, held=waiting)

    def claim(
        self,
        selections: Sequence[Selection],
        new_key: Callable[[], str],
        now: datetime,
        *,
        byte_budget: int | None = None,
    ) -> list[Claim]:
        claims: list[Claim] = []
        left = byte_budget
        with transaction(self.session_factory) as session:
            for selection in selections:
                key = new_key()
                files = q.claim(session, selection, key, now, byte_budget=left, library=self.library)
                if left is not None:
                    left -= sum(f.size_bytes for f in files)
                claims.append((selection, key, files))
            q.mark_requests_started(session, [f.id for _, _, files in claims for f in files], now)
        return claims

    def handed_over(
        self, accepted: Sequence[HandedOver], refused: Sequence[int], now: datetime
    ) -> tuple[int, int]:
        with transaction(self.session_factory) as session:
            submitted = q.record_handed_over(session, accepted, now, self.library or DEFAULT_LIBRARY)
            returned = q.return_to_queue(session, refused)
        return submitted, returned
