"""First in, first out, one file at a time: the random pattern unaggregated clients produce (a baseline).

Files are handed to the library in arrival order, each in its own batch, as many as the library's queue has
room for in each class of service (and never more than max_files per cycle).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from carousel.domain.library_needs import HsmDiscipline, LibraryNeeds
from carousel.domain.planning import Plan, ReadOrder, Selection, Snapshot
from policies.common import PolicyOptions


class FifoOptions(PolicyOptions):
    # upper bound on files handed over per cycle, whatever room the library reports
    max_files: int = Field(default=1000, ge=1)


class FifoPolicy:
    name = "fifo"
    # XRootD's random pattern against an HSM that does not regroup: files served in arrival order, a free
    # drive mounts the cartridge of the next one
    library_needs = LibraryNeeds(HsmDiscipline.FIFO)

    def __init__(self, options: FifoOptions | None = None) -> None:
        self.options = options or FifoOptions()

    def plan(self, snapshot: Snapshot) -> Plan:
        if not snapshot.library.online:
            return Plan(waiting={t.tape: "the library is offline" for t in snapshot.tapes})
        budget = self.options.max_files
        selections: list[Selection] = []
        waiting: dict[str, str] = {}
        # oldest class first, so one busy class cannot keep an older one waiting for the cycle's budget
        classes = sorted(
            {t.service_class for t in snapshot.tapes},
            key=lambda c: min(t.oldest for t in snapshot.tapes if t.service_class == c),
        )
        for service_class in classes:
            room = self._room(snapshot, service_class)
            take = min(room, budget)
            if take <= 0:
                reason = self._why_waiting(snapshot, service_class, room)
                waiting.update({t.tape: reason for t in snapshot.tapes if t.service_class == service_class})
                continue
            selections.append(
                Selection(
                    tape=None,
                    max_files=take,
                    order=ReadOrder.ARRIVAL,
                    one_file_per_batch=True,
                    service_class=service_class,
                )
            )
            budget -= take
        return Plan(selections=tuple(selections), waiting=waiting)

    @staticmethod
    def _why_waiting(snapshot: Snapshot, service_class: str, room: int) -> str:
        if room > 0:
            return "this cycle's file budget is spent"
        if service_class not in snapshot.library.queue_slots:
            return f"the library reports no queue for class of service {service_class!r}"
        return f"the library queue for class of service {service_class!r} is full"

    def _room(self, snapshot: Snapshot, service_class: str) -> int:
        """Free queue slots for the class; a library that reports none for any class is not slot-bounded."""
        slots = snapshot.library.queue_slots
        if not slots:
            return self.options.max_files
        return slots.get(service_class, 0)


def build_fifo(options: Mapping[str, Any]) -> FifoPolicy:
    return FifoPolicy(FifoOptions.model_validate(dict(options)))
