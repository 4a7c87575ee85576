"""Two `carousel scheduler` processes on one PostgreSQL database: one leads and keeps leading; when it is
killed (SIGKILL) the other takes over at its next cycle and finishes the work the dead one had
handed to its library (a library that died with it), each file read once."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from carousel.db.engine import make_engine, make_session_factory
from carousel.db.leader_lock import SCHEDULER_LOCK_KEY
from carousel.db.models import QueuedFileRow
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.simulated.read_log import TAPE, read_log_lines
from tests.integration.resilience.processes import BANNER, LEADS, environment, scheduler
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import catalogue_files

pytestmark = [pytest.mark.postgres]

INTERVAL_S = 1.0
FILES = 20
LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 4,
    "catalogue": {"generate": {"seed": 31, "cartridges": 4, "files_per_cartridge": 10}},
}
WAIT_S = 60.0
SKIPPED = "cycle skipped: another instance holds the leader lock"  # the standby's debug log, every cycle
# The leader's library at a hundredth of real speed: its first read would take most of an hour, so nothing it
# was given is read before it dies, however slow the machine.
LEADER_SCALE = 0.01


def logged_at(record: dict[str, Any]) -> datetime:
    """When the process wrote the record (its own clock, UTC), not when the test came to read it."""
    return datetime.fromisoformat(record["timestamp"])


def settings(url: str, read_log: Path, scale: float) -> dict[str, str]:
    generate = LIBRARY["catalogue"]["generate"]
    return {
        "CAROUSEL_DATABASE_URL": url,
        "CAROUSEL_CYCLE_INTERVAL_S": str(INTERVAL_S),
        "CAROUSEL_ADAPTER_OPTIONS__PROFILE": LIBRARY["profile"],
        "CAROUSEL_ADAPTER_OPTIONS__DRIVES": str(LIBRARY["drives"]),
        "CAROUSEL_ADAPTER_OPTIONS__SCALE": str(scale),
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SEED": str(generate["seed"]),
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__CARTRIDGES": str(generate["cartridges"]),
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__FILES_PER_CARTRIDGE": str(
            generate["files_per_cartridge"]
        ),
        "CAROUSEL_ADAPTER_OPTIONS__READ_LOG": str(read_log),
    }


def test_a_standby_takes_over_at_its_next_cycle_when_the_leader_is_killed(
    postgres_databases, postgres_template, tmp_path
):
    url = postgres_databases.create(template=postgres_template)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    plain_url = url.render_as_string(hide_password=False)
    read_log = tmp_path / "reads.csv"
    clock = ManualClock()
    catalogue_adapter = build_simulated_adapter(LIBRARY, clock)
    add_request(factory, catalogue_files(catalogue_adapter, FILES, clock.now()), clock.now())
    catalogue_adapter.close()

    def count(state: str) -> int:
        with factory() as session:
            found = session.scalar(select(func.count()).where(QueuedFileRow.state == state))
        return int(found or 0)

    def wait(what: str, done: Any) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            assert time.monotonic() < deadline, f"{what}: not within {WAIT_S:g} s"
            time.sleep(0.05)

    leader = scheduler(
        environment(settings(plain_url, read_log, scale=LEADER_SCALE)), tmp_path / "leader.log"
    )
    standby = None
    try:
        leader.wait_for(LEADS)
        wait("the leader handing every file to its library", lambda: count("SUBMITTED") == FILES)
        standby_settings = {**settings(plain_url, read_log, scale=2000.0), "CAROUSEL_LOG_LEVEL": "DEBUG"}
        standby = scheduler(environment(standby_settings), tmp_path / "standby.log")
        standby.wait_for(BANNER)
        wait("two of the standby's cycles", lambda: len(standby.events(SKIPPED)) >= 2)
        assert not standby.events(LEADS)
        with engine.connect() as connection:
            holders = connection.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    " AND ((classid::bigint << 32) | objid::bigint) = :key"
                ),
                {"key": SCHEDULER_LOCK_KEY},
            ).scalar_one()
        assert holders == 1

        assert read_log_lines(read_log) == [], "the dead leader's library read nothing"
        killed_at = datetime.now(UTC)  # on the clock the standby's records are stamped with
        leader.kill()
        standby.wait_for(LEADS, timeout_s=WAIT_S)
        [took_over] = standby.events(LEADS)
        # The standby's own records say which of its cycles came after the kill, however late the test reads
        # them; counted in cycles, not in seconds, which a loaded machine stretches.
        skipped_after = [r for r in standby.events(SKIPPED) if logged_at(r) > killed_at]
        took_over_s = (logged_at(took_over) - killed_at).total_seconds()
        print(
            f"standby took over {took_over_s:.2f} s after the leader was killed (interval {INTERVAL_S:g} s),"
            f" {len(skipped_after)} of its cycles skipped since"
        )
        assert len(skipped_after) <= 1, "it leads at its first cycle after the kill (or the next, if one ran)"

        wait("the standby finishing the dead leader's work", lambda: count("STAGED") == FILES)
        tape_reads = [line.path for line in read_log_lines(read_log) if line.source == TAPE]
        assert len(tape_reads) == len(set(tape_reads)) == FILES  # each read once, by the new leader's library
    finally:
        if leader.process.poll() is None:
            leader.kill()
        if standby is not None:
            standby.stop()
        engine.dispose()
        postgres_databases.drop(url)
