"""Stepping the service in virtual time: the simulated library on a manual clock, the real fifo policy."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.models import QueuedFileRow, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.scheduler.cycle import Cycle, CycleReport
from hsm_adapters.simulated.adapter import SimulatedAdapter
from policies.registry import build_policy
from tests.integration.scheduler.rows import queued

SMALL_LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 3, "cartridges": 4, "files_per_cartridge": 20}},
    "scale": 1.0,
}


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"max_attempts": 3, "retry_backoff_s": 100.0, "claim_timeout_s": 300.0}
    return Settings(**{**values, **overrides})


def make_cycle(
    factory: sessionmaker[Session],
    adapter: SimulatedAdapter,
    clock: ManualClock,
    *,
    policy_options: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> Cycle:
    return Cycle(settings(**overrides), factory, adapter, build_policy("fifo", policy_options), clock)


def run_until(
    cycle: Cycle,
    clock: ManualClock,
    done: Callable[[], bool],
    *,
    step_s: float = 20.0,
    max_cycles: int = 1000,
) -> list[CycleReport]:
    """Step the service in virtual time: a cycle, then the clock moves on; bounded."""
    reports: list[CycleReport] = []
    for _ in range(max_cycles):
        reports.append(cycle.run_once())
        if done():
            return reports
        clock.advance(step_s)
    raise AssertionError(f"not done after {max_cycles} cycles ({max_cycles * step_s:g} s of virtual time)")


def catalogue_files(
    adapter: SimulatedAdapter, count: int, now: datetime, *, tapes: int | None = None
) -> list[QueuedFileRow]:
    """QUEUED rows for files of the library's catalogue (as intake would resolve them), taken from the
    first `tapes` cartridges in turn."""
    catalogue = adapter.library.catalogue
    chosen_tapes = catalogue.tapes[:tapes] if tapes else catalogue.tapes
    # round robin over the tapes: arrivals interleave, as many independent clients make them
    per_tape = [catalogue.on_tape(tape) for tape in chosen_tapes]
    entries = [e for row in itertools.zip_longest(*per_tape) for e in row if e is not None]
    return [
        queued(e.path, e.tape, e.position_bytes, now + timedelta(microseconds=n), size=e.size_bytes)
        for n, e in enumerate(entries[:count])
    ]


def file_states(factory: sessionmaker[Session]) -> dict[str, str]:
    with factory() as session:
        return dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.state)).all())


def all_in(factory: sessionmaker[Session], *states: FileState) -> Callable[[], bool]:
    wanted = {s.value for s in states}

    def check() -> bool:
        found = file_states(factory)
        return bool(found) and set(found.values()) <= wanted

    return check


def request_state(factory: sessionmaker[Session], request_id: str) -> str:
    with factory() as session:
        state = session.scalar(select(StageRequest.state).where(StageRequest.id == request_id))
    assert state is not None
    return state


def count(factory: sessionmaker[Session], model: type[Any]) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)
