"""CTA's mount policy (CERN Tape Archive), a baseline: thresholds decide when a tape is worth a mount.

A tape's queue becomes a mount candidate once its queued bytes or files, or the age of its oldest request,
pass the policy's thresholds (CTA: 500 GB, 10,000 files, or the mount policy's minimum request age).
Candidates take free drives in order of priority, then age (oldest first), each group holding at most its
drive limit (CTA's maxDrivesAllowed per mount policy). While a tape holds a drive, it is fed batches of up
to 80 GB / 4,000 files, the next one as soon as less than a batch is in flight. When its queue runs dry the
session ends: later requests for the tape wait for the thresholds again, mounted or not.

carousel runs it as CTA runs itself: the policy decides every mount; the library only serves what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from carousel.domain.library_needs import HsmDiscipline, HsmReadOrder, LibraryNeeds
from carousel.domain.planning import Plan, ReadOrder, Selection, Snapshot, TapeDemand
from policies.common import MAX_DURATION_S, PolicyOptions, age_s, main_group, offline_plan

GB = 10**9


class CtaOptions(PolicyOptions):
    min_bytes: int = Field(default=500 * GB, ge=0)
    min_files: int = Field(default=10_000, ge=1)
    min_age_s: float = Field(default=3600.0, ge=0, le=MAX_DURATION_S)
    batch_max_bytes: int = Field(default=80 * GB, ge=1)
    batch_max_files: int = Field(default=4_000, ge=1)
    # most drives a group may hold at once; groups not named have no limit
    max_drives: dict[str, int] = Field(default_factory=dict)


class CtaPolicy:
    name = "cta"
    # CTA decides the mounts itself (this policy) and orders the reads on each tape (RAO)
    library_needs = LibraryNeeds(HsmDiscipline.TAPE_ORDERED, read_order=HsmReadOrder.SHORTEST_LOCATE)

    def __init__(self, options: CtaOptions | None = None) -> None:
        self.options = options or CtaOptions()

    def plan(self, snapshot: Snapshot) -> Plan:
        if not snapshot.library.online:
            return offline_plan(snapshot)
        options = self.options
        sessions = {t.tape: t for t in snapshot.in_flight_tapes if t.files > 0}
        mounted = set(snapshot.library.mounted_tapes)
        in_use: dict[str, int] = {}
        for busy in sessions.values():
            group = main_group(busy.groups)
            in_use[group] = in_use.get(group, 0) + 1

        selections: list[Selection] = []
        waiting: dict[str, str] = {}
        candidates: list[TapeDemand] = []
        wake_at: datetime | None = None
        for tape in sorted(
            snapshot.tapes, key=lambda t: t.tape
        ):  # plans never depend on the snapshot's order
            session = sessions.get(tape.tape)
            if session is not None:
                self._feed_session(
                    tape, session.files, sum(g.bytes for g in session.groups), selections, waiting
                )
            elif tape.tape in mounted and tape.retries == tape.files:
                waiting[tape.tape] = "still mounted: its files failed on this mount and wait for a later one"
            elif self._eligible(tape, snapshot.now):
                candidates.append(tape)
            else:
                waiting[tape.tape] = self._below_thresholds(tape, snapshot.now)
                due = tape.oldest + timedelta(seconds=options.min_age_s)
                wake_at = due if wake_at is None else min(wake_at, due)

        free = snapshot.library.drives_total - len(sessions)
        for tape in sorted(candidates, key=lambda t: (-t.max_priority, t.oldest, t.tape)):
            group = main_group(tape.groups)
            limit = options.max_drives.get(group)
            if free <= 0:
                waiting[tape.tape] = "ready to mount: waiting for a free drive"
            elif limit is not None and in_use.get(group, 0) >= limit:
                waiting[tape.tape] = f"ready to mount: group {group!r} holds its {limit} drives"
            else:
                free -= 1
                in_use[group] = in_use.get(group, 0) + 1
                reuse = tape.tape in mounted and tape.retries > 0  # the same mount: retries wait
                files = tape.files - tape.retries if reuse else tape.files
                selections.append(self._batch(tape.tape, files, options.batch_max_bytes, fresh_only=reuse))
        return Plan(selections=tuple(selections), waiting=waiting, wake_at=wake_at)

    def _eligible(self, tape: TapeDemand, now: datetime) -> bool:
        o = self.options
        return tape.bytes >= o.min_bytes or tape.files >= o.min_files or age_s(tape, now) >= o.min_age_s

    def _below_thresholds(self, tape: TapeDemand, now: datetime) -> str:
        o = self.options
        return (
            f"below the mount thresholds: {tape.files} of {o.min_files} files, {tape.bytes / GB:.1f} of "
            f"{o.min_bytes / GB:g} GB, oldest {age_s(tape, now):.0f} of {o.min_age_s:g} s"
        )

    def _feed_session(
        self,
        tape: TapeDemand,
        files_in_flight: int,
        bytes_in_flight: int,
        selections: list[Selection],
        waiting: dict[str, str],
    ) -> None:
        """A mounted (or mounting) tape takes its next batch once less than a batch is in flight."""
        room_files = self.options.batch_max_files - files_in_flight
        room_bytes = self.options.batch_max_bytes - bytes_in_flight
        fresh = tape.files - tape.retries  # files that failed before wait for a later mount
        if room_files <= 0 or room_bytes <= 0:
            waiting[tape.tape] = "mounted: its current batch is being read"
        elif fresh <= 0:
            waiting[tape.tape] = "mounted: its files failed on this mount and wait for a later one"
        else:
            selections.append(
                self._batch(tape.tape, min(room_files, fresh), room_bytes, fresh_only=tape.retries > 0)
            )

    def _batch(self, tape: str, files: int, max_bytes: int, *, fresh_only: bool = False) -> Selection:
        return Selection(
            tape=tape,
            max_files=min(files, self.options.batch_max_files),
            order=ReadOrder.POSITION,
            max_bytes=max_bytes,
            first_attempts_only=fresh_only,
        )


def build_cta(options: Mapping[str, Any]) -> CtaPolicy:
    return CtaPolicy(CtaOptions.model_validate(dict(options)))
