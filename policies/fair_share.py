"""Fair share across groups (experiments, users, activities): a layer over any policy.

Drives are what groups share, and drive time is what they are accounted in (`Snapshot.usage`: the
drive-seconds of the mounts that read each group's files over the queue store's window). Each cycle:

1. Groups with queued work share the drives by weight (a bandwidth percentage is a weight). A group with
   nothing queued takes no share: its share is lent to the others for as long as it stays idle. A quota caps
   a group at a fraction of the drives (at least one drive when it is above zero), whatever the others leave.
2. Each group is entitled to the whole part of its share of the drives; the drives left over go one by one to
   the groups furthest below their share of the drive time used so far (target share × total used − used),
   so over time drive time follows the weights even when the drives do not divide evenly.
3. A group may add as many tapes as its entitlement exceeds the tapes it holds (a tape in flight is held by
   the group with most of its files in flight), no more than it has tapes waiting. Drives no entitled group
   can use are lent, again furthest below its share first, within quotas.
4. The inner policy plans each group on its own view: the group's work and files in flight, its share of the
   library's queue slots, and otherwise the whole library (every drive, every tape in flight, so it judges
   scarcity as it is and files joining a tape in flight stay free). The layer keeps the new tapes of that plan
   up to the group's allowance, in the inner policy's order, and narrows every selection to the group.

Policies that bound themselves by files in flight (star2006) see the group's own files in flight, so their
bound applies per group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from pydantic import Field, ValidationError, field_validator

from carousel.domain.library_needs import LibraryNeeds
from carousel.domain.planning import (
    GroupDemand,
    GroupUsage,
    Plan,
    Selection,
    Snapshot,
    TapeDemand,
)
from policies.base import Policy, library_needs_of
from policies.common import PolicyOptions, main_group, offline_plan


class FairShareOptions(PolicyOptions):
    weights: dict[str, float] = Field(default_factory=dict)  # groups not named weigh default_weight
    default_weight: float = Field(default=1.0, gt=0)
    quotas: dict[str, float] = Field(default_factory=dict)  # most a group may hold, a fraction of the drives

    def weight(self, group: str) -> float:
        return self.weights.get(group, self.default_weight)

    @field_validator("weights")
    @classmethod
    def _positive_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        for group, weight in weights.items():
            if weight <= 0:
                raise ValueError(f"weights[{group!r}] must be positive, got {weight}")
        return weights

    @field_validator("quotas")
    @classmethod
    def _quotas_are_fractions(cls, quotas: dict[str, float]) -> dict[str, float]:
        for group, quota in quotas.items():
            if not 0 < quota <= 1:
                raise ValueError(f"quotas[{group!r}] must lie in (0, 1], got {quota}")
        return quotas


def shares(groups: list[str], options: FairShareOptions) -> dict[str, float]:
    """Fractions of the drives, summing to 1 over `groups` unless quotas cap them all: weights renormalised
    over the groups present, a capped group's excess spread over the uncapped ones by weight."""
    result: dict[str, float] = {}
    open_groups = sorted(groups)
    left = 1.0
    while open_groups:
        total = sum(options.weight(g) for g in open_groups)
        capped = [
            g
            for g in open_groups
            if g in options.quotas and left * options.weight(g) / total > options.quotas[g]
        ]
        if not capped:
            for g in open_groups:
                result[g] = left * options.weight(g) / total
            break
        for g in capped:
            result[g] = options.quotas[g]
            left -= options.quotas[g]
            open_groups.remove(g)
    return result


class FairSharePolicy:
    """Wraps `inner`; answers to the inner policy's name and declares its library needs."""

    def __init__(self, inner: Policy, options: FairShareOptions) -> None:
        self.inner = inner
        self.options = options
        self.name = inner.name

    @property
    def library_needs(self) -> LibraryNeeds:
        return library_needs_of(self.inner)

    def plan(self, snapshot: Snapshot) -> Plan:
        if not snapshot.library.online:
            return offline_plan(snapshot)
        queued = _queued_by_group(snapshot.tapes)
        if not queued:
            return self.inner.plan(snapshot)
        drives = snapshot.library.drives_total
        share = shares(list(queued), self.options)
        holder = {t.tape: main_group(t.groups) for t in snapshot.in_flight_tapes if t.files > 0}
        held = {g: sum(1 for h in holder.values() if h == g) for g in set(holder.values()) | set(queued)}
        waiting_tapes = {g: sum(1 for t in tapes if t.tape not in holder) for g, tapes in queued.items()}
        new = self._new_tapes(
            snapshot, share=share, held=held, waiting_tapes=waiting_tapes, drives=drives, busy=len(holder)
        )

        selections: list[Selection] = []
        waiting: dict[str, str] = {}
        wake_at: datetime | None = None
        for group in sorted(queued):
            plan = self.inner.plan(self._view(snapshot, group=group, tapes=queued[group], share=share[group]))
            kept, refused = _within_allowance(plan.selections, set(holder), new[group])
            selections.extend(replace(s, group=group) for s in kept)
            for tape in refused:
                waiting[tape] = f"{group}: the group has its share of the drives"
            for tape, reason in plan.waiting.items():
                waiting.setdefault(tape, f"{group}: {reason}")
            if plan.wake_at is not None:
                wake_at = plan.wake_at if wake_at is None else min(wake_at, plan.wake_at)
        return Plan(selections=tuple(selections), waiting=waiting, wake_at=wake_at)

    def _new_tapes(
        self,
        snapshot: Snapshot,
        *,
        share: dict[str, float],
        held: dict[str, int],
        waiting_tapes: dict[str, int],
        drives: int,
        busy: int,
    ) -> dict[str, int]:
        """How many more tapes each group may have in flight after this cycle (steps 2 and 3)."""
        used = {u.group: u.drive_s for u in snapshot.usage if u.group in share}
        total_used = sum(used.values())

        def behind(group: str) -> tuple[float, float, str]:
            # furthest below its share of the drive time first; then the larger share; then the name
            return (used.get(group, 0.0) - share[group] * total_used, -share[group], group)

        cap = {
            g: max(1, math.floor(self.options.quotas[g] * drives)) if g in self.options.quotas else drives
            for g in share
        }
        entitled = {g: min(cap[g], math.floor(share[g] * drives + 1e-9)) for g in share}
        spare = drives - sum(entitled.values())
        for group in sorted(share, key=behind):
            if spare <= 0:
                break
            if entitled[group] < cap[group]:
                entitled[group] += 1
                spare -= 1
        # free drives go first to the groups furthest below their entitlement, then are lent
        want = {g: max(0, min(entitled[g] - held.get(g, 0), waiting_tapes[g])) for g in share}
        new = dict.fromkeys(share, 0)
        free = drives - busy
        while free > 0:
            short = [g for g in share if new[g] < want[g]]
            if short:
                chosen = min(short, key=lambda g: (new[g] - want[g], *behind(g)))
            else:
                takers = [g for g in share if new[g] < waiting_tapes[g] and held.get(g, 0) + new[g] < cap[g]]
                if not takers:
                    break
                chosen = min(takers, key=behind)
            new[chosen] += 1
            free -= 1
        return new

    @staticmethod
    def _view(snapshot: Snapshot, *, group: str, tapes: list[TapeDemand], share: float) -> Snapshot:
        """The queue as one group sees it: its own work and files in flight, its share of the queue slots, and
        the whole library otherwise (every tape in flight, every drive), so the inner policy judges how scarce
        drives are as they are; the layer then keeps no more new tapes than the group's allowance."""
        in_flight = sum(g.files for t in snapshot.in_flight_tapes for g in t.groups if g.group == group)
        slots = {name: math.floor(room * share) for name, room in snapshot.library.queue_slots.items()}
        usage = tuple(u for u in snapshot.usage if u.group == group) or (GroupUsage(group, 0.0),)
        return replace(
            snapshot,
            tapes=tuple(tapes),
            library=replace(snapshot.library, queue_slots=slots),
            in_flight=in_flight,
            usage=usage,
        )


def _within_allowance(
    selections: tuple[Selection, ...], busy: set[str], allowance: int
) -> tuple[list[Selection], list[str]]:
    """The selections to keep: joins of tapes in flight and any-tape ones always, new tapes up to the
    allowance (in the inner policy's order); and the new tapes refused."""
    kept: list[Selection] = []
    admitted: set[str] = set()
    refused: list[str] = []
    for selection in selections:
        tape = selection.tape
        if tape is None or tape in busy or tape in admitted:
            kept.append(selection)
        elif len(admitted) < allowance:
            admitted.add(tape)
            kept.append(selection)
        elif tape not in refused:
            refused.append(tape)
    return kept, refused


def _queued_by_group(tapes: tuple[TapeDemand, ...]) -> dict[str, list[TapeDemand]]:
    """Each group's queued work as tapes of its own: its files, bytes, oldest arrival and priority there."""
    by_group: dict[str, list[TapeDemand]] = {}
    for tape in tapes:
        for part in tape.groups:
            by_group.setdefault(part.group, []).append(_part_of(tape, part))
    return by_group


def _part_of(tape: TapeDemand, part: GroupDemand) -> TapeDemand:
    return TapeDemand(
        tape=tape.tape,
        files=part.files,
        bytes=part.bytes,
        oldest=part.oldest or tape.oldest,
        max_priority=part.max_priority if part.oldest is not None else tape.max_priority,
        service_class=tape.service_class,
        groups=(part,),
        in_flight=tape.in_flight,
    )


def wrap_with_fair_share(inner: Policy, options: Mapping[str, Any]) -> FairSharePolicy:
    try:
        parsed = FairShareOptions.model_validate(dict(options))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"fair_share.{where}: {first['msg']}") from None
    return FairSharePolicy(inner, parsed)
