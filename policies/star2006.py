"""STAR's DataCarousel as it ran in 2006 (seed 003_867e2db8593b7725.txt), a baseline.

The DataCarousel grouped requests by tape ID, started with the tape that had most files requested, sorted
the files by tape, and handed the mass storage "jobs" of N files, keeping K jobs in flight plus up to an
overflow of more jobs, whose consumption showed the store was alive. Its daemon then made at most `depth`
calls to HPSS at a time per class of service (30 for the DST class, 20 for the Raw one); the rest waited.

How that maps onto carousel:
- a job is one Selection of at most N files of one tape, in position order; a tape with more files makes
  several jobs, one with fewer makes a short one (a batch never spans tapes here);
- in flight is counted in files: while fewer than K·N files are in flight, jobs are added until
  (K + overflow)·N are, so between K·N and (K + overflow)·N files are always requested (the overflow is the
  margin whose consumption shows progress);
- tapes go most files first (ties: oldest request, then tape id);
- the depth per class of service belongs to the HSM side: the policy does not use it to plan, it declares it
  as its `library_needs`, the queue depth the simulated library is given when a replay runs this policy (its
  files beyond the depth wait in line in arrival order, and the library serves its queue first come, first
  served).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from carousel.domain.library_needs import HsmDiscipline, LibraryNeeds
from carousel.domain.planning import Plan, ReadOrder, Selection, Snapshot
from policies.common import PolicyOptions, offline_plan


class Star2006Options(PolicyOptions):
    jobs: int = Field(default=50, ge=1)  # K
    files_per_job: int = Field(default=15, ge=1)  # N
    overflow_jobs: int = Field(default=25, ge=0)
    # HSM-side queue depth per class of service: "default" plays STAR's DST class, "raw" its Raw class
    depth: dict[str, int] = Field(default_factory=lambda: {"default": 30, "raw": 20})

    @property
    def floor_files(self) -> int:
        return self.jobs * self.files_per_job

    @property
    def ceiling_files(self) -> int:
        return (self.jobs + self.overflow_jobs) * self.files_per_job


class Star2006Policy:
    name = "star2006"

    def __init__(self, options: Star2006Options | None = None) -> None:
        self.options = options or Star2006Options()

    @property
    def library_needs(self) -> LibraryNeeds:
        """A FIFO HSM with STAR's depth per class of service: the jobs beyond it wait in line, as they did
        at the daemon in front of HPSS."""
        return LibraryNeeds(HsmDiscipline.FIFO, queue_depth=self.options.depth)

    def plan(self, snapshot: Snapshot) -> Plan:
        if not snapshot.library.online:
            return offline_plan(snapshot)
        options = self.options
        if snapshot.in_flight >= options.floor_files:
            reason = f"{snapshot.in_flight} files in flight: at least K·N = {options.floor_files} already"
            return Plan(waiting={t.tape: reason for t in snapshot.tapes})
        budget = options.ceiling_files - snapshot.in_flight
        selections: list[Selection] = []
        waiting: dict[str, str] = {}
        for tape in sorted(snapshot.tapes, key=lambda t: (-t.files, t.oldest, t.tape)):
            if budget <= 0:
                waiting[tape.tape] = f"(K + overflow)·N = {options.ceiling_files} files requested already"
                continue
            take = min(tape.files, budget)
            budget -= take
            for start in range(0, take, options.files_per_job):
                selections.append(
                    Selection(
                        tape=tape.tape,
                        max_files=min(options.files_per_job, take - start),
                        order=ReadOrder.POSITION,
                    )
                )
        return Plan(selections=tuple(selections), waiting=waiting)


def build_star2006(options: Mapping[str, Any]) -> Star2006Policy:
    return Star2006Policy(Star2006Options.model_validate(dict(options)))
