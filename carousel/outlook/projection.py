"""What the next cycles would do: the policy's own plans, projected forward from a snapshot on the library's
cost figures, with no new arrivals.

The projection asks the policy for a plan, gives each tape it selects a drive (the drive that frees first:
list scheduling), and holds that drive for the tape's mount, its pass over the files taken and its unmount
(`LibraryCosts`: the very figures the policies weigh). Files that join a tape already on a drive lengthen its
pass. Then time moves to the next moment anything can change (a tape's last read, a drive coming free, the
plan's `wake_at`), in-flight work that finished leaves the snapshot, and the policy plans again — so a policy
that holds tapes back (gathering work, thresholds, fair share) is followed as it would act, not guessed at.

The first plan is the one the next cycle makes from the same snapshot, so its waiting reasons are the
ones users see. The disk buffer's room (what admission may hand over now) is cut from that plan as the cycle
cuts it, and from every plan made while the projected clock has not moved: the bytes handed over at the
snapshot's instant take room until they land, and nothing lands at that instant. From the next moment on
the room is taken to be back (no release by clients is modelled: an optimistic estimate).

After `max_plans` plans (or `horizon`) the tapes still waiting are placed in priority then arrival order on
the drives as they free, without asking the policy: a rough estimate, flagged.

A file is taken to be on disk when its tape's pass ends (the tape's `eta`); files are not followed one by one.
The costs are in seconds of the snapshot's clock (a simulated library on a scaled clock publishes them so).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from carousel.domain.buffer import admit_plan, after_claims
from carousel.domain.media import hold_back
from carousel.domain.planning import (
    GroupDemand,
    LibraryCosts,
    Plan,
    ReadOrder,
    Selection,
    Snapshot,
    TapeDemand,
    TapeInFlight,
)

MAX_PLANS = 400
HORIZON = timedelta(days=14)
Planner = Callable[[Snapshot], Plan]


@dataclass(frozen=True, slots=True)
class ProjectedPass:
    """One tape on one drive: a new mount, or files joining a tape on a drive (`joined`)."""

    tape: str
    drive: int
    files: int
    bytes: int
    planned_at: datetime  # when the plan that took these files was made
    plan: int  # which projected plan took them: 1 is the next cycle's; 0 in flight already; -1 rough
    reads_from: datetime  # its first read begins (mounted)
    done_at: datetime  # its last read ends
    joined: bool = False


@dataclass(frozen=True, slots=True)
class TapeOutlook:
    """One tape with work at the snapshot: what the next cycle does with it, and when its files are read."""

    tape: str
    queued: int
    in_flight: int
    selected: bool  # the next cycle's plan takes some of its queued files
    reason: str | None  # the next cycle's plan's waiting reason, if it gives one
    files_ahead: int | None  # files of other passes that start reading before this tape's first read
    starts_at: datetime | None
    eta: datetime | None  # when the last of its files (queued or in flight at the snapshot) is read
    rough: bool = False  # placed without the policy (beyond the horizon)


@dataclass(frozen=True, slots=True)
class Projection:
    now: datetime
    plan: Plan  # the next cycle's plan
    tapes: dict[str, TapeOutlook]
    passes: tuple[ProjectedPass, ...] = ()
    plans: int = 1
    complete: bool = False  # every tape was placed by the policy's own plans
    note: str | None = None  # why there are no times, or why some are rough

    @property
    def claimed_bytes(self) -> int:
        """The bytes handed over at the snapshot's instant: the room in the disk buffer they take."""
        return _claimed_at(self.passes, self.now)

    @property
    def drained_at(self) -> datetime | None:
        """When the last file of the snapshot is read, if every tape has a time."""
        etas = [t.eta for t in self.tapes.values()]
        if not etas or any(e is None for e in etas):
            return None
        return max(e for e in etas if e is not None)


@dataclass(slots=True)
class _Drive:
    free_at: datetime  # after the unmount of the last tape given to it
    tape: str | None = None  # the last tape given to it


@dataclass(slots=True)
class _Work:
    """Files of one tape handed over together, and whose they are (group -> [files, bytes])."""

    tape: str
    files: int
    bytes: int
    groups: dict[str, list[int]]


@dataclass(slots=True)
class _Flying:
    """A tape handed to the library and not finished: its drive and when its last read ends."""

    drive: int
    work: _Work
    reads_from: datetime
    done_at: datetime


@dataclass(slots=True)
class _Run:
    costs: LibraryCosts
    drives: list[_Drive]
    queued: dict[str, TapeDemand]
    flying: dict[str, _Flying] = field(default_factory=dict)
    # tapes whose pass has ended, still on their drive until it unmounts them: files handed over for one
    # meanwhile join its mount (a policy may wait for a pass to end before it hands more over)
    resting: dict[str, _Flying] = field(default_factory=dict)
    passes: list[ProjectedPass] = field(default_factory=list)
    slots: dict[str, int] = field(default_factory=dict)
    slots_used: int = 0  # files handed over since the snapshot, against the library's queue slots
    slots_freed: int = 0

    # --- drives -------------------------------------------------------------------------------------------

    def mount(
        self,
        work: _Work,
        at: datetime,
        plan: int,
        *,
        mounted: bool = False,
        not_before: datetime | None = None,
    ) -> None:
        """A new pass of the tape on the drive that frees first, or the files join its pass if it has one.
        `mounted`: the tape is on a drive now, its reads start without a mount. `not_before`: the tape is
        out of its slot until then (a cartridge is in one drive at a time)."""
        flying = self.flying.get(work.tape) or self._revived(work.tape, at)
        if flying is not None:
            self._join(flying, work, at, plan)
            return
        d = min(range(len(self.drives)), key=lambda n: (self.drives[n].free_at, n))
        if not_before is not None:  # the drive free last by then: the others stay free for other tapes
            ready = [n for n in range(len(self.drives)) if self.drives[n].free_at <= not_before]
            d = max(ready, key=lambda n: (self.drives[n].free_at, -n), default=d)
        drive = self.drives[d]
        start = max(at, drive.free_at, not_before or at)
        reads_from = start if mounted else start + timedelta(seconds=self.costs.mount_s)
        done = reads_from + timedelta(seconds=self.costs.pass_s(work.files, work.bytes))
        drive.free_at = done + timedelta(seconds=self.costs.unmount_s)
        drive.tape = work.tape
        self.flying[work.tape] = _Flying(d, work, reads_from, done)
        self.passes.append(ProjectedPass(work.tape, d, work.files, work.bytes, at, plan, reads_from, done))

    def _join(self, flying: _Flying, work: _Work, at: datetime, plan: int) -> None:
        """Files for a tape with a pass under way: read in the same pass (late binding), after its files."""
        held = flying.work
        per_file = self.costs.locate_per_file_s(held.files + work.files) + self.costs.overhead_s
        reads_from = max(at, flying.done_at)
        flying.done_at = reads_from + timedelta(seconds=work.files * per_file + self.costs.read_s(work.bytes))
        held.files += work.files
        held.bytes += work.bytes
        for group, (n, b) in work.groups.items():
            entry = held.groups.setdefault(group, [0, 0])
            entry[0] += n
            entry[1] += b
        self.drives[flying.drive].free_at = flying.done_at + timedelta(seconds=self.costs.unmount_s)
        self.passes.append(
            ProjectedPass(
                work.tape, flying.drive, work.files, work.bytes, at, plan, reads_from, flying.done_at, True
            )
        )

    def _still_mounted(self, tape: str, t: datetime) -> _Flying | None:
        """A tape whose pass ended and whose drive has neither unmounted it by `t` nor taken another."""
        rested = self.resting.get(tape)
        if rested is None:
            return None
        drive = self.drives[rested.drive]
        return rested if drive.tape == tape and drive.free_at > t else None

    def _revived(self, tape: str, at: datetime) -> _Flying | None:
        """Files for a tape still on its drive after its pass: they join that mount, as in the library."""
        rested = self._still_mounted(tape, at)
        if rested is None:
            return None
        del self.resting[tape]
        self.slots_freed -= rested.work.files  # counted when it landed; counted again when it lands anew
        self.flying[tape] = rested
        return rested

    # --- time ---------------------------------------------------------------------------------------------

    def land(self, t: datetime) -> None:
        """Tapes whose last read has ended by `t` leave the library's work (they stay on their drive until
        it unmounts them)."""
        for tape in [tape for tape, f in self.flying.items() if f.done_at <= t]:
            landed = self.flying.pop(tape)
            self.slots_freed += landed.work.files
            self.resting[tape] = landed

    def next_event(self, t: datetime, wake_at: datetime | None) -> datetime | None:
        moments = [f.done_at for f in self.flying.values() if f.done_at > t]
        moments += [d.free_at for d in self.drives if d.free_at > t]
        if wake_at is not None and wake_at > t:
            moments.append(wake_at)
        return min(moments, default=None)

    def snapshot(self, base: Snapshot, t: datetime) -> Snapshot:
        flying = tuple(
            TapeInFlight(
                tape,
                f.work.files,
                tuple(GroupDemand(g, n, b) for g, (n, b) in sorted(f.work.groups.items())),
            )
            for tape, f in sorted(self.flying.items())
        )
        free = sum(1 for d in self.drives if d.free_at <= t)
        mounted = tuple(
            sorted(
                [tape for tape, f in self.flying.items() if f.reads_from <= t]
                + [tape for tape in self.resting if self._still_mounted(tape, t) is not None]
            )
        )
        room = self.slots_freed - self.slots_used
        slots = {name: max(0, left + room) for name, left in self.slots.items()}
        library = replace(base.library, drives_free=free, mounted_tapes=mounted, queue_slots=slots)
        return replace(
            base,
            now=t,
            tapes=tuple(self.queued.values()),
            library=library,
            in_flight=sum(f.work.files for f in self.flying.values()),
            in_flight_tapes=flying,
        )

    # --- taking the plan ----------------------------------------------------------------------------------

    def take(self, plan: Plan, t: datetime, number: int) -> int:
        """Hands the plan's selections to the projected library; the files taken."""
        taken = 0
        for selection in plan.selections:
            budget = selection.max_files
            for tape in self._targets(selection):
                if budget <= 0:
                    break
                work = self._take_from(tape, selection, budget)
                if work is None:
                    continue
                budget -= work.files
                if selection.one_file_per_batch:
                    self._one_by_one(work, t, number)
                else:
                    self.mount(work, t, number)
            taken += selection.max_files - budget
        self.slots_used += taken
        return taken

    def _targets(self, selection: Selection) -> list[str]:
        if selection.tape is not None:
            return [selection.tape] if selection.tape in self.queued else []
        tapes = [
            t
            for t in self.queued.values()
            if selection.service_class is None or t.service_class == selection.service_class
        ]
        if selection.order is ReadOrder.ARRIVAL:
            tapes.sort(key=lambda t: (t.oldest, t.tape))
        else:
            tapes.sort(key=lambda t: t.tape)
        return [t.tape for t in tapes]

    def _take_from(self, name: str, selection: Selection, budget: int) -> _Work | None:
        """Up to `budget` of the tape's queued files, as the claim would pick them; the rest stay queued."""
        tape = self.queued[name]
        available = tape.files - (tape.retries if selection.first_attempts_only else 0)
        if selection.group is not None:
            available = min(available, sum(g.files for g in tape.groups if g.group == selection.group))
        files = min(budget, available)
        if files <= 0:
            return None
        mean = tape.bytes / tape.files
        if selection.max_bytes is not None and mean > 0:
            files = min(files, max(1, math.floor(selection.max_bytes / mean)))
        size = tape.bytes if files == tape.files else round(mean * files)
        work = _Work(name, files, size, _split(tape.groups, files, size, only=selection.group))
        if files == tape.files:
            del self.queued[name]
            return work
        left = []
        for group in tape.groups:
            gone, gone_bytes = work.groups.get(group.group, (0, 0))
            if group.files > gone:
                left.append(replace(group, files=group.files - gone, bytes=max(0, group.bytes - gone_bytes)))
        rest = tape.files - files
        retries = tape.retries if selection.first_attempts_only else min(tape.retries, rest)
        self.queued[name] = replace(
            tape, files=rest, bytes=max(0, tape.bytes - size), groups=tuple(left), retries=retries
        )
        return work

    def _one_by_one(self, work: _Work, t: datetime, number: int) -> None:
        """Files handed over one per batch: a mount each (the library is not trusted to regroup them)."""
        each = work.bytes // work.files
        group = next(iter(work.groups), "default")
        for n in range(work.files):
            one = work.bytes - each * (work.files - 1) if n == work.files - 1 else each
            before = self.flying.pop(work.tape, None)
            # a cartridge is in one drive at a time: its next mount waits for its pass and unmount
            free = before.done_at + timedelta(seconds=self.costs.unmount_s) if before is not None else None
            self.mount(_Work(work.tape, 1, one, {group: [1, one]}), t, number, not_before=free)
            if before is not None:  # several passes of one tape: the tape lands with the last, counting all
                latest = self.flying[work.tape]
                latest.work.files += before.work.files
                latest.work.bytes += before.work.bytes
                latest.done_at = max(latest.done_at, before.done_at)

    def place_roughly(self, t: datetime) -> None:
        """Tapes the policy was not asked about: priority then arrival order, on the drives as they free."""
        for tape in sorted(self.queued.values(), key=lambda d: (-d.max_priority, d.oldest, d.tape)):
            groups = {g.group: [g.files, g.bytes] for g in tape.groups}
            self.mount(_Work(tape.tape, tape.files, tape.bytes, groups), t, -1)
        self.queued.clear()


def _split(groups: Iterable[GroupDemand], files: int, size: int, *, only: str | None) -> dict[str, list[int]]:
    """Which groups' files a take of `files` files holds: all of one group, or each group's share."""
    members = list(groups)
    if only is not None:
        return {only: [files, size]}
    if not members:
        return {"default": [files, size]}
    total = sum(g.files for g in members)
    out: dict[str, list[int]] = {}
    given = 0
    ranked = sorted(members, key=lambda g: (-g.files, g.group))
    for n, group in enumerate(ranked):
        last = n == len(ranked) - 1
        share = files - given if last else min(files - given, group.files, round(files * group.files / total))
        if share > 0:
            out[group.group] = [share, round(size * share / files)]
            given += share
    return out


def project(
    snapshot: Snapshot,
    plan: Planner,
    *,
    max_plans: int = MAX_PLANS,
    horizon: timedelta = HORIZON,
) -> Projection:
    """The next cycle's plan and the passes that follow it, per tape. `plan` is a policy's plan method on a
    policy instance of the projection's own (policies may keep memos between plans)."""
    # as the cycle cuts it: tapes that wait for buffer space, tapes an admin holds back
    first = hold_back(admit_plan(plan(snapshot), snapshot), snapshot.held)
    library = snapshot.library
    costs = library.costs
    note: str | None = None
    if not library.online:
        note = "the library is offline: nothing moves until it is back"
    elif costs is None:
        note = "the library publishes no cost figures: no times can be estimated"
    elif library.drives_total <= 0:
        note = "the library reports no drive in service"
    if note is not None or costs is None:
        return Projection(snapshot.now, first, _outlooks(snapshot, first, ()), note=note)

    now = snapshot.now
    run = _Run(
        costs=costs,
        drives=[_Drive(now) for _ in range(library.drives_total)],
        queued={t.tape: t for t in snapshot.tapes},
        slots=dict(library.queue_slots),
    )
    _start_in_flight(run, snapshot)
    current, plans, t = first, 1, now
    complete = True
    while True:
        took = run.take(current, t, plans)
        if not run.queued:
            break
        following = t if took else run.next_event(t, current.wake_at)
        if following is None or plans >= max_plans or following - now > horizon:
            complete = False
            note = (
                "the policy holds the remaining tapes back and nothing in the projection changes that"
                if following is None
                else f"beyond {plans} plans or {horizon}: the remaining tapes are placed roughly"
            )
            break
        t = following
        run.land(t)
        current = _room_cut(plan(later := run.snapshot(snapshot, t)), later, run.passes, now)
        plans += 1
    if run.queued:
        run.place_roughly(t)
    passes = tuple(run.passes)
    return Projection(now, first, _outlooks(snapshot, first, passes), passes, plans, complete, note)


def _claimed_at(passes: Iterable[ProjectedPass], now: datetime) -> int:
    """Bytes of the passes planned at `now` (not those in flight before it)."""
    return sum(p.bytes for p in passes if p.plan >= 1 and p.planned_at == now)


def _room_cut(plan: Plan, snapshot: Snapshot, passes: Iterable[ProjectedPass], start: datetime) -> Plan:
    """A plan made while the projected clock still stands at `start`, cut to the room the plans before it
    left in the disk buffer; a plan made later is left as it is (the room is taken to be back)."""
    if snapshot.buffer is None or snapshot.now != start:
        return plan
    room = after_claims(snapshot.buffer, _claimed_at(passes, start))
    return admit_plan(plan, replace(snapshot, buffer=room))


def _start_in_flight(run: _Run, snapshot: Snapshot) -> None:
    """Tapes the library holds work for: those mounted first (they hold their drives), then the others."""
    mounted = set(snapshot.library.mounted_tapes)
    for tape in sorted(snapshot.in_flight_tapes, key=lambda t: (t.tape not in mounted, t.tape)):
        if tape.files <= 0:
            continue
        groups = {g.group: [g.files, g.bytes] for g in tape.groups}
        work = _Work(tape.tape, tape.files, sum(g.bytes for g in tape.groups), groups)
        run.mount(work, snapshot.now, 0, mounted=tape.tape in mounted)


def _outlooks(snapshot: Snapshot, first: Plan, passes: tuple[ProjectedPass, ...]) -> dict[str, TapeOutlook]:
    selected = {s.tape for s in first.selections if s.tape is not None}
    if any(s.tape is None for s in first.selections):  # a selection over every tape: taken from passes
        selected |= {p.tape for p in passes if p.plan == 1}
    in_flight = {t.tape: t.files for t in snapshot.in_flight_tapes if t.files > 0}
    queued = {t.tape: t.files for t in snapshot.tapes}
    by_tape: dict[str, list[ProjectedPass]] = {}
    for p in passes:
        by_tape.setdefault(p.tape, []).append(p)
    # files of passes that start reading strictly before a tape's first read (passes starting together:
    # on different drives, none is ahead of the other)
    ahead: dict[str, int] = {}
    read_before = 0
    for _, starting in itertools.groupby(
        sorted(passes, key=lambda p: p.reads_from), key=lambda p: p.reads_from
    ):
        together = list(starting)
        for p in together:
            ahead.setdefault(p.tape, read_before)
        read_before += sum(p.files for p in together)
    outlooks: dict[str, TapeOutlook] = {}
    for tape in sorted(set(queued) | set(in_flight)):
        own = by_tape.get(tape, [])
        outlooks[tape] = TapeOutlook(
            tape=tape,
            queued=queued.get(tape, 0),
            in_flight=in_flight.get(tape, 0),
            selected=tape in selected,
            reason=first.waiting.get(tape),
            files_ahead=ahead.get(tape),
            starts_at=min((p.reads_from for p in own), default=None),
            eta=max((p.done_at for p in own), default=None),
            rough=any(p.plan == -1 for p in own),
        )
    return outlooks
