"""The scheduler killed (SIGKILL) at random points of its cycle, many times, during a 10,000-file run on
PostgreSQL: at the end every file is staged, each read from tape exactly once, and none is lost or stuck.

Requests arrive through a `carousel api` process (never killed) while schedulers come and go: each
`carousel scheduler` is started, left to run for a random while, or until it has claims outstanding (the
window between claim and record), or until files are with its library (on a loaded machine a random while
can end before the first hand-over), and killed. To kill one inside a window, the test freezes it (SIGSTOP)
when the database shows the window open, looks again while it cannot move, and kills it only if the window is
still open (else lets it go on and watches again): the window is seen open at the kill, not guessed. Its
simulated library dies with it; the next one finds the dead one's files SUBMITTED and hands them to its own
library again (carousel.scheduler.inflight), and its stale claims back in the queue after claim_timeout_s.
The libraries share a read log, the disk cache an HSM keeps across carousel's restarts
(hsm_adapters.simulated.read_log): counting its `tape` lines per path shows how often each file was read
from tape, across all processes.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from carousel.db.engine import make_engine, make_session_factory
from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import FILE_ACTIVE, LinkState
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.simulated.read_log import DISK, TAPE, read_log_lines
from tests.integration.resilience.processes import BANNER, api, environment, scheduler

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SEED = 20261122
KILLS = 12
REQUESTS = 10
LIBRARY: dict[str, Any] = {
    "profile": "lto8",
    "drives": 8,
    "scale": 2000.0,  # about 6,000 s of library time for the whole run: a few seconds of wall time
    "catalogue": {"generate": {"seed": 7, "cartridges": 100, "files_per_cartridge": 100}},
}
SETTINGS = {
    "CAROUSEL_POLICY": "carousel",
    "CAROUSEL_CYCLE_INTERVAL_S": "0.25",
    "CAROUSEL_CLAIM_TIMEOUT_S": "2",  # one scheduler at a time: a claim this old belongs to a dead one
    "CAROUSEL_ADAPTER_OPTIONS__PROFILE": LIBRARY["profile"],
    "CAROUSEL_ADAPTER_OPTIONS__DRIVES": str(LIBRARY["drives"]),
    "CAROUSEL_ADAPTER_OPTIONS__SCALE": str(LIBRARY["scale"]),
    "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SEED": "7",
    "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__CARTRIDGES": "100",
    "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__FILES_PER_CARTRIDGE": "100",
    # LIBRARY's generator, whatever the embedded default library's is
    "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SIZE_MODEL": "star2006",
    "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__LAYOUT": "packed",
}
ACTIVE = sorted(state.value for state in FILE_ACTIVE)
WATCH_S = 10.0  # bounded; a loaded machine may take seconds to reach its first claim
# bounded: the last scheduler fails the run when no file has ended for this long (load only slows it down)
STALL_S = 60.0
POLL_S = 0.002


def freeze_inside(process: Any, is_open: Callable[[], bool]) -> None:
    """Stop `process` (SIGSTOP) at a moment `is_open()` holds, watching for at most WATCH_S (then it is left
    running): once stopped, `is_open()` is asked again, and only a window still open keeps it stopped."""
    deadline = time.monotonic() + WATCH_S
    while time.monotonic() < deadline:
        if is_open():
            process.send_signal(signal.SIGSTOP)
            if is_open():  # looked at again while it cannot move: still open at the kill
                return
            process.send_signal(signal.SIGCONT)
        time.sleep(POLL_S)


def test_killed_schedulers_lose_nothing_and_read_each_file_once(
    postgres_databases, postgres_template, tmp_path
):
    url = postgres_databases.create(template=postgres_template)
    engine = make_engine(url, pool_size=2)
    factory = make_session_factory(engine)
    plain_url = url.render_as_string(hide_password=False)
    read_log = tmp_path / "reads.csv"
    common = {"CAROUSEL_DATABASE_URL": plain_url, **SETTINGS}
    scheduler_env = environment({**common, "CAROUSEL_ADAPTER_OPTIONS__READ_LOG": str(read_log)})
    rng = random.Random(SEED)

    catalogue = build_simulated_adapter(LIBRARY, ManualClock()).library.catalogue
    paths = sorted(catalogue)
    assert len(paths) == 10_000
    rng.shuffle(paths)  # requests mix tapes, as independent clients do
    per_request = len(paths) // REQUESTS
    orders = [paths[n * per_request : (n + 1) * per_request] for n in range(REQUESTS)]

    def by_state() -> Counter[str]:
        with factory() as session:
            rows = session.execute(select(QueuedFileRow.state, func.count()).group_by(QueuedFileRow.state))
            return Counter({state: count for state, count in rows})

    started = time.monotonic()
    api_process, base = api(environment(common), tmp_path / "api.log")
    request_ids: list[str] = []
    kills: list[dict[str, Any]] = []
    final = None
    seen: list[Counter[str]] = []  # what the last scheduler's watch saw, told when the end differs
    try:

        def submit_next() -> None:
            order = orders[len(request_ids)]
            answer = httpx.post(f"{base}/api/native/v1/requests", json={"paths": order}, timeout=60)
            assert answer.status_code == 201, answer.text
            request_ids.append(answer.json()["id"])

        for n in range(KILLS):
            if len(request_ids) < REQUESTS:
                submit_next()
            victim = scheduler(scheduler_env, tmp_path / f"scheduler-{n:02d}.log")
            victim.wait_for(BANNER)
            how = rng.choice(("random", "claims", "submitted"))
            if how != "random":  # kill it while a cycle has claimed, or handed files to its library
                watched = "CLAIMED" if how == "claims" else "SUBMITTED"
                freeze_inside(victim.process, lambda state=watched: by_state()[state] > 0)
            else:
                time.sleep(rng.uniform(0.0, 1.5))  # somewhere in one of its cycles
            victim.kill()
            after = by_state()
            kills.append({"how": how, "claimed": after["CLAIMED"], "submitted": after["SUBMITTED"]})

        while len(request_ids) < REQUESTS:
            submit_next()
        final = scheduler(scheduler_env, tmp_path / "scheduler-final.log")
        final.wait_for(BANNER)
        seen.append(by_state())
        active = sum(seen[-1][s] for s in ACTIVE)
        deadline = time.monotonic() + STALL_S
        while active:
            time.sleep(0.2)
            seen.append(by_state())
            still = sum(seen[-1][s] for s in ACTIVE)
            if still < active:  # progress: the watch starts again
                active, deadline = still, time.monotonic() + STALL_S
            assert time.monotonic() < deadline, f"no file ended for {STALL_S:g} s: {by_state()}"
        elapsed = time.monotonic() - started
    finally:
        if final is not None:
            final.stop()
        api_process.stop()

    try:
        # none lost, none stuck, none failed
        assert by_state() == Counter({"STAGED": 10_000}), f"the watch saw last: {seen[-3:]}"
        with factory() as session:
            links = Counter(session.scalars(select(RequestFile.state)))
            requests = Counter(session.scalars(select(StageRequest.state)))
        assert links == Counter({LinkState.COMPLETED.value: 10_000})
        assert requests == Counter({"DONE": REQUESTS})

        lines = read_log_lines(read_log)
        tape_reads = Counter(line.path for line in lines if line.source == TAPE)
        assert set(tape_reads) == set(paths) and set(tape_reads.values()) == {1}  # each read once from tape
        first_read = {line.path: (n, line.instance) for n, line in enumerate(lines) if line.source == TAPE}
        from_disk = [(n, line) for n, line in enumerate(lines) if line.source == DISK]
        for n, line in from_disk:  # found on disk: read earlier, by a library that has died since
            read_at, reader = first_read[line.path]
            assert read_at < n and reader != line.instance

        left_claims = sum(1 for k in kills if k["claimed"])
        left_in_flight = sum(1 for k in kills if k["submitted"])
        most_claimed = max(k["claimed"] for k in kills)
        libraries = len({line.instance for line in lines})
        ways = dict(Counter(k["how"] for k in kills))
        print(
            f"\n{KILLS} kills ({ways}); {left_claims} left claims outstanding"
            f" (at most {most_claimed} files), {left_in_flight} left files with their library; 10,000 files"
            f" staged, {len(tape_reads)} read from tape once each, {len(from_disk)} found on disk after their"
            f" first reader died unreported; {libraries} libraries; {elapsed:.0f} s"
        )
        assert left_claims >= 1 and left_in_flight >= 1  # the dangerous windows were hit
    finally:
        engine.dispose()
        postgres_databases.drop(url)
