"""carousel's own policy (the default): for every tape with work, mount it now, let it wait, or keep it on
the drive that holds it, from a cost model of the library.

The cost model (figures from `LibraryView.costs`, the library's physics as plain numbers):
- a mount of tape i serving its n queued files of B bytes takes
  T_i = mount + n·(locate(n) + overhead) + B/rate + unmount drive-seconds; a tape already on a drive takes
  only the pass, n·(locate(n) + overhead) + B/rate;
- its worth per drive-second is the streaming time it buys, (B/rate) / T_i, raised by waiting:
  score_i = (B/rate) / T_i · (1 + age_i / age_scale_s). Busy libraries thus stream the tapes that give most
  data per drive-second, and age lifts every tape in time;
- rent or buy: a new mount takes its fixed costs (mount + unmount) away from everyone else, which only
  matters when drives are scarce. With u the fraction of drives busy, a tape is mounted once the waiting its
  files have accrued, n·age, reaches patience · ρ(u) · (mount + unmount), ρ(u) = max(0, (u − knee) / (1 − u)).
  Under light load (u ≤ knee) ρ is 0 and every tape is mounted as soon as a drive is free; near saturation
  tapes wait to gather work, so mounts carry more files;
- keep the mounted tape: files that arrive for a tape that is mounted or being read join it (late binding:
  the library reads them in head order), in one batch once the drive has read the files it holds (the
  library orders each batch for the fewest locates; a file handed over alone every cycle, as a large request
  arrives, interleaves hundreds of batches and makes the head jump between them); an idle mounted tape
  with work keeps its drive, before every tape of its priority that needs a mount. Files whose read failed
  before never join a mounted tape: they wait for a later mount;
- robots (when the library publishes them, `LibraryCosts.robot_s`): short mounts are not all left to the
  end, where one robot could not exchange cartridges as fast as the drives finish them (`robot_balanced`);
  when the robots have at least half as much work left as the drives, free drives are paced for them
  (policies/robot_pace.py: short mounts while the mounts in progress free drives more slowly than the
  robots exchange cartridges, else the longest tape), and nothing is held back to gather work.

Nothing starves: a tape whose oldest request has waited max_wait_s goes before every other (oldest first;
when the robots are paced, those that arrived within age_scale_s of the oldest are paced among themselves:
a batch that takes longer than max_wait_s is not read in arrival order), skips the patience rule, and while
such a tape has no drive, busy tapes take no new files, so drives come free. Priorities order tapes before
scores; fair share across groups is a separate layer (policies/fair_share.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from carousel.domain.library_needs import HsmDiscipline, HsmReadOrder, LibraryNeeds
from carousel.domain.planning import LibraryCosts, Plan, ReadOrder, Selection, Snapshot, TapeDemand
from policies.common import (
    MAX_DURATION_S,
    CostOptions,
    PolicyOptions,
    age_s,
    busy_tapes,
    costs_of,
    offline_plan,
)
from policies.robot_pace import in_flight_left_s, paced_order, robots_matter

RETRIES_WAIT = "its files failed on a mount of this tape: they wait for a later one"
NO_DRIVE = "no free drive"
JOIN_WAIT = "joins its mount in one batch once the drive has read the files it holds"


class CarouselOptions(PolicyOptions):
    # no tape waits longer for a drive than this
    max_wait_s: float = Field(default=4 * 3600.0, gt=0, le=MAX_DURATION_S)
    age_scale_s: float = Field(default=1800.0, gt=0, le=MAX_DURATION_S)  # waiting this long doubles a score
    patience: float = Field(default=1.0, ge=0)  # 0: never hold a tape back while a drive is free
    knee: float = Field(default=0.5, ge=0, lt=1)  # drive use below which nothing is held back
    max_files_per_mount: int = Field(default=10_000, ge=1)  # bounds one claim
    keep_mounted: bool = True  # late binding: arrivals for a mounted tape join it
    # late binding in one batch once the drive has read what it holds: the library orders each batch for the
    # fewest locates, and a file handed over alone every cycle, as a large request arrives, defeats that
    join_when_read: bool = True
    # ...or once the oldest of them has waited this long (None: only once the drive has read what it holds):
    # a library that merges a batch with the unread files of its cartridge reads them in the running pass
    join_after_s: float | None = Field(default=300.0, gt=0, le=MAX_DURATION_S)
    costs: CostOptions = Field(default_factory=CostOptions)  # when the library publishes none


# (rank key, tape, on a drive already, starving, drive-seconds its mount takes, the same without locates): the
# key sorts starving tapes first (oldest first among them), then by priority, then tapes on a drive (they
# keep it: their files joined in one batch once it had read what it held), then by score; the tape id makes
# every key unique
_Ranked = tuple[tuple[bool, float, int, bool, float, datetime, str], TapeDemand, bool, bool, float, float]


class CarouselPolicy:
    name = "carousel"
    # as cta: the policy decides the mounts, the library reads each mount in the fewest locates it finds
    # the library merges a batch for a cartridge being read with its unread files (join_after_s)
    library_needs = LibraryNeeds(
        HsmDiscipline.TAPE_ORDERED, read_order=HsmReadOrder.SHORTEST_LOCATE, merge_batches=True
    )

    def __init__(self, options: CarouselOptions | None = None) -> None:
        self.options = options or CarouselOptions()
        # the tapes without a drive of the last snapshot, kept while the store hands the same tapes again
        self._idle_memo: (
            tuple[tuple[TapeDemand, ...], frozenset[str], list[TapeDemand], dict[str, str]] | None
        )
        self._idle_memo = None

    def plan(self, snapshot: Snapshot) -> Plan:
        if not snapshot.library.online:
            return offline_plan(snapshot)
        options = self.options
        costs = costs_of(snapshot, options.costs)
        now = snapshot.now
        busy = busy_tapes(snapshot)
        mounted = set(snapshot.library.mounted_tapes) if options.keep_mounted else set()
        drives = snapshot.library.drives_total

        joining = sorted((t for t in snapshot.tapes if t.tape in busy), key=lambda t: t.tape)
        others, no_drive = self._without_drive(snapshot.tapes, busy)
        # the oldest tape without a drive decides whether anyone starves, and when someone will
        oldest = min((t.oldest for t in others), default=None)
        starving_since = now - timedelta(seconds=options.max_wait_s)
        starving_without_drive = oldest is not None and oldest <= starving_since

        selections: list[Selection] = []
        waiting: dict[str, str] = {}
        joins_at: datetime | None = None  # when the first waiting arrivals for a tape being read join it
        for tape in joining:
            if starving_without_drive and tape.oldest > starving_since:
                waiting[tape.tape] = "not joining its mount: a tape waiting too long needs a drive"
            elif tape.retries and tape.oldest <= starving_since:
                waiting[tape.tape] = "not joining its mount: its retries have waited too long for a new one"
            elif tape.retries == tape.files:
                waiting[tape.tape] = RETRIES_WAIT
            elif options.join_when_read and (
                options.join_after_s is None or age_s(tape, now) < options.join_after_s
            ):
                waiting[tape.tape] = JOIN_WAIT
                if options.join_after_s is not None:
                    joins_at = _earliest(joins_at, tape.oldest + timedelta(seconds=options.join_after_s), now)
            else:
                selections.append(self._selection(tape, on_drive=True))

        wake_at = joins_at  # time alone makes those arrivals join
        in_use = len(busy)
        if in_use >= drives:
            # nothing to rank: every other tape waits, and only a tape starting to starve changes that
            waiting = {**no_drive, **waiting}
            if oldest is not None and joining:
                wake_at = _earliest(wake_at, oldest + timedelta(seconds=options.max_wait_s), now)
            return Plan(selections=tuple(selections), waiting=waiting, wake_at=wake_at)

        fixed_s = costs.mount_s + costs.unmount_s
        ranked = self._rank(others, mounted, costs, now)
        paced = False
        if costs.robot_s > 0 and len(ranked) > drives - in_use:
            in_flight_s = in_flight_left_s(snapshot, costs)
            paced = robots_matter([entry[4] for entry in ranked], in_flight_s, costs, drives)
            if paced:
                ranked = _paced(
                    ranked,
                    in_flight_s,
                    costs,
                    drives=drives,
                    free=drives - in_use,
                    window_s=options.age_scale_s,
                )
            else:
                ranked = robot_balanced(ranked, costs, drives)
        for rank, (_, tape, on_drive, starving, _, _) in enumerate(ranked):
            if in_use >= drives:
                # the rest wait for a drive; one of them starting to starve is what time alone changes
                waiting.update((t.tape, NO_DRIVE) for _, t, _, _, _, _ in ranked[rank:])
                rest = min(t.oldest for _, t, _, _, _, _ in ranked[rank:])
                wake_at = _earliest(wake_at, rest + timedelta(seconds=options.max_wait_s), now)
                break
            if on_drive and tape.retries == tape.files:
                waiting[tape.tape] = RETRIES_WAIT
                continue
            if not on_drive and not starving and not paced:
                threshold = options.patience * self._scarcity(in_use, drives) * fixed_s
                accrued = tape.files * age_s(tape, now)
                if accrued < threshold:
                    waiting[tape.tape] = (
                        f"gathering work: {accrued:.0f} of {threshold:.0f} file-seconds waited before a mount"
                        f" is worth its {fixed_s:.0f} s"
                    )
                    ready = tape.oldest + timedelta(seconds=threshold / tape.files)
                    wake_at = _earliest(wake_at, min(ready, self._starving_at(tape)), now)
                    continue
            in_use += 1
            selections.append(self._selection(tape, on_drive=on_drive))
        return Plan(selections=tuple(selections), waiting=waiting, wake_at=wake_at)

    def _without_drive(
        self, tapes: tuple[TapeDemand, ...], busy: set[str]
    ) -> tuple[list[TapeDemand], dict[str, str]]:
        """The tapes with no drive, and each waiting for one. Kept for the next snapshot if the store hands
        over the very same tapes again (the replay's memory store does while nothing changes)."""
        memo = self._idle_memo
        frozen = frozenset(busy)
        if memo is not None and memo[0] is tapes and memo[1] == frozen:
            return memo[2], memo[3]
        others = [t for t in tapes if t.tape not in busy]
        no_drive = dict.fromkeys((t.tape for t in others), NO_DRIVE)
        self._idle_memo = (tapes, frozen, others, no_drive)
        return others, no_drive

    def _rank(
        self, tapes: list[TapeDemand], mounted: set[str], costs: LibraryCosts, now: datetime
    ) -> list[_Ranked]:
        """Every tape without a drive, best first, scored by the cost model."""
        options = self.options
        rate, overhead = costs.rate_bytes_per_s, costs.overhead_s
        fixed_s = costs.mount_s + costs.unmount_s
        locate: dict[int, float] = {}
        now_s = now.timestamp()
        ranked: list[_Ranked] = []
        for tape in tapes:
            on_drive = tape.tape in mounted
            files = min(tape.files - (tape.retries if on_drive else 0), options.max_files_per_mount)
            size = tape.bytes if files == tape.files else tape.bytes * max(files, 0) // tape.files
            per_file = locate.get(files)
            if per_file is None:
                per_file = locate[files] = costs.locate_per_file_s(max(files, 1))
            read_s = size / rate
            service_s = max(files, 0) * (per_file + overhead) + read_s + (0.0 if on_drive else fixed_s)
            since = tape.oldest.timestamp()
            age = max(0.0, now_s - since)
            starving = age >= options.max_wait_s
            score = (read_s / service_s if service_s > 0 else 0.0) * (1.0 + age / options.age_scale_s)
            key = (
                not starving,
                since if starving else 0.0,
                -tape.max_priority,
                not on_drive,
                -score,
                tape.oldest,
                tape.tape,
            )
            ranked.append((key, tape, on_drive, starving, service_s, service_s - max(files, 0) * per_file))
        ranked.sort(key=lambda r: r[0])
        return ranked

    def _scarcity(self, in_use: int, drives: int) -> float:
        """ρ(u): 0 up to the knee, then growing without bound as the last drives fill."""
        use = in_use / drives
        knee = self.options.knee
        if use <= knee:
            return 0.0
        return (use - knee) / max(1.0 - use, 1.0 / drives)

    def _starving_at(self, tape: TapeDemand) -> datetime:
        return tape.oldest + timedelta(seconds=self.options.max_wait_s)

    def _selection(self, tape: TapeDemand, *, on_drive: bool) -> Selection:
        """A tape's files; on a drive already, those whose read failed before wait for a later mount."""
        fresh_only = on_drive and tape.retries > 0
        files = tape.files - tape.retries if fresh_only else tape.files
        return Selection(
            tape=tape.tape,
            max_files=min(files, self.options.max_files_per_mount),
            order=ReadOrder.POSITION,
            first_attempts_only=fresh_only,
        )


def robot_balanced(ranked: list[_Ranked], costs: LibraryCosts, drives: int) -> list[_Ranked]:
    """The ranked tapes reordered so that the robots are not left with a pile of short mounts at the end.

    Every mount takes its drive for its service time and the robots for `robot_s` (two moves). Drive time per
    mount varies a thousandfold between a one-file cartridge and a popular one; robot time does not. Read the
    most data per drive-second first (the ranking) and the short mounts pile up at the end, where a robot that
    idled while the long ones ran cannot exchange cartridges as fast as the drives finish them. So, within
    each block of equal standing (not starving, one priority), the next tape is:
    - the longest, once its service time reaches the time the work left needs at least: the larger of the
      robots' share (robot_s per tape / robots) and the drives' share without locates (the cost model's
      locates are position order's, above what the library's read order pays), so it cannot decide the end;
    - else, while the robots' share is the larger, the shortest mount (most robot work per drive-second);
    - else the next by rank.
    """
    ordered: list[_Ranked] = []
    start = 0
    while start < len(ranked):
        stop = start
        standing = ranked[start][0][:3]
        while stop < len(ranked) and ranked[stop][0][:3] == standing:
            stop += 1
        block = ranked[start:stop]
        # starving tapes keep their order; so do tapes on a drive (first in the ranking: they need no robot)
        mounted = [entry for entry in block if entry[2]]
        rest = block[len(mounted) :]
        ordered.extend(mounted)
        ordered.extend(rest if block[0][3] or len(rest) <= 1 else _balance(rest, costs, drives))
        start = stop
    return ordered


def _balance(block: list[_Ranked], costs: LibraryCosts, drives: int) -> list[_Ranked]:
    by_length = sorted(range(len(block)), key=lambda i: (block[i][4], i))  # shortest first; ties by rank
    taken = [False] * len(block)
    drive_left = sum(entry[5] for entry in block)
    robot_left = costs.robot_s * len(block)
    by_rank, shortest, longest = 0, 0, len(block) - 1
    ordered: list[_Ranked] = []
    for _ in range(len(block)):
        while taken[by_rank]:
            by_rank += 1
        while taken[by_length[shortest]]:
            shortest += 1
        while taken[by_length[longest]]:
            longest -= 1
        robots_need = robot_left / costs.robots
        drives_need = drive_left / drives
        if block[by_length[longest]][4] >= max(robots_need, drives_need):
            chosen = by_length[longest]
        elif robots_need > drives_need:
            chosen = by_length[shortest]
        else:
            chosen = by_rank
        taken[chosen] = True
        drive_left -= block[chosen][5]
        robot_left -= costs.robot_s
        ordered.append(block[chosen])
    return ordered


def _paced(
    ranked: list[_Ranked],
    in_flight_s: list[float],
    costs: LibraryCosts,
    *,
    drives: int,
    free: int,
    window_s: float,
) -> list[_Ranked]:
    """The ranked tapes with those of the first block of equal standing (priority; starving tapes whose
    oldest request came within window_s of the oldest one's) paced for the robots (policies/robot_pace.py):
    in a batch that takes longer than max_wait_s every tape ends up starving, and arrival order within it
    means nothing. Tapes on a drive go first, as in the ranking: they need no robot, and a
    long tape read in two mounts would pay its locates twice."""
    standing = ranked[0][0][:3]
    stop = 0
    if ranked[0][3]:  # starving: oldest first, but those that came within window_s of the oldest are paced
        until = ranked[0][0][1] + window_s
        while stop < len(ranked) and ranked[stop][3] and ranked[stop][0][1] < until:
            stop += 1
    while stop < len(ranked) and ranked[stop][0][:3] == standing:
        stop += 1
    block = ranked[:stop]
    mounted = [entry for entry in block if entry[2]]  # first: they need no robot (as in robot_balanced)
    rest = [entry for entry in block if not entry[2]]
    in_flight_s = in_flight_s + [entry[4] for entry in mounted]
    order = paced_order(
        [e[4] for e in rest],
        [e[5] for e in rest],
        in_flight_s,
        costs=costs,
        drives=drives,
        picks=free - len(mounted),
    )
    return mounted + [rest[i] for i in order] + ranked[stop:]


def _earliest(current: datetime | None, candidate: datetime, now: datetime) -> datetime | None:
    """The sooner of two wake-up times; a time already past wakes nothing (it has happened)."""
    if candidate <= now:
        return current
    return candidate if current is None else min(current, candidate)


def build_carousel(options: Mapping[str, Any]) -> CarouselPolicy:
    return CarouselPolicy(CarouselOptions.model_validate(dict(options)))
