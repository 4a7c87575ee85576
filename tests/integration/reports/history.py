"""Recorded history for the report, dashboard and metrics tests: requests from three groups arrive in waves,
and the real cycle (carousel policy) feeds the simulated library (with a few read errors) in virtual time.
The last wave arrives shortly before the end, so the queue still holds work when the history stops."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.engine import transaction
from carousel.db.leader_lock import SingleProcessLock
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from carousel.scheduler.cycle import Cycle, CycleReport
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from policies.registry import build_policy

LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 3,
    "catalogue": {"generate": {"seed": 11, "cartridges": 12, "files_per_cartridge": 40}},
    "faults": {"seed": 3, "read_error_probability": 0.05},
    "scale": 1.0,
}
GROUPS = ("atlas", "cms", "star")
STEP_S = 30.0
FIRST_WAVE_S = 600.0  # waves start off the hour, so buckets and waves do not line up
WAVE_EVERY_S = 1_500.0
TAIL_S = 240.0  # after the last wave: long enough for mounts to start, too short to finish

Runner = Callable[[Cycle], Callable[[], CycleReport]]


@dataclass
class History:
    adapter: SimulatedAdapter
    cycle: Cycle
    started: datetime
    ended: datetime
    requests: list[str]
    reports: list[CycleReport]


def make_history(
    factory: sessionmaker[Session],
    clock: ManualClock,
    *,
    waves: int = 4,
    files_per_wave: int = 40,
    seed: int = 5,
    runner: Runner = lambda cycle: cycle.run_once,
) -> History:
    """Waves of four requests each (random catalogue files, a group each) every WAVE_EVERY_S, a cycle every
    STEP_S of virtual time; the adapter stays open for the caller to close."""
    adapter = build_simulated_adapter(LIBRARY, clock)
    cycle = Cycle(
        Settings(retry_backoff_s=300.0),
        factory,
        adapter,
        build_policy("carousel", {}),
        clock,
        leader_lock=SingleProcessLock(),  # one process here: no lock connection to keep open
    )
    run_once = runner(cycle)
    rng = random.Random(seed)
    paths = list(adapter.library.catalogue)
    started = clock.now()
    requests: list[str] = []
    reports: list[CycleReport] = []
    elapsed = 0.0
    for wave in range(waves):
        arrival = FIRST_WAVE_S + wave * WAVE_EVERY_S
        while elapsed < arrival:
            reports.append(run_once())
            clock.advance(STEP_S)
            elapsed += STEP_S
        for n in range(4):
            order = StageOrder(
                paths=tuple(rng.sample(paths, files_per_wave // 4)),
                api=Api.NATIVE,
                list_field="paths",
                path_field="paths[{}]",
                group=GROUPS[(wave + n) % len(GROUPS)],
            )
            with transaction(factory) as session:
                submitted = submit(
                    session, adapter, clock, ANONYMOUS, order, max_files=1000, max_path_bytes=4096
                )
            requests.append(submitted.request_id)
    end = elapsed + TAIL_S
    while elapsed < end:
        reports.append(run_once())
        clock.advance(STEP_S)
        elapsed += STEP_S
    return History(adapter, cycle, started, clock.now(), requests, reports)
