"""Two `carousel scheduler` processes on PostgreSQL, a leader and a standby started with it; the leader is
killed (SIGKILL) while files are with its library, several times, and each time the standby takes over and
a new standby is started. Counted from the read log the libraries share: every file read from tape exactly
once, every request done.

The danger: the standby's library was built before the leader's library read anything, and the files the
leader read but did not report (its events died with it) are SUBMITTED when the standby takes over, which
hands them to its own library again. With the buffer on, their bytes are in the buffer: the new leader
completes them as staged before resubmitting anything (carousel.scheduler.buffer_adoption), so no library
is asked for them again. With the buffer off, the new leader's library answers them from disk, because it
reads the shared log when asked, not only at its start (hsm_adapters.simulated.read_log).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from carousel.db.engine import make_engine, make_session_factory
from carousel.db.models import QueuedFileRow, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import FILE_ACTIVE, LinkState
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.simulated.catalogue import CSV_HEADER
from hsm_adapters.simulated.read_log import DISK, TAPE, read_log_lines
from tests.integration.resilience.processes import BANNER, LEADS, Watched, environment, scheduler
from tests.integration.resilience.test_crash import freeze_inside
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import catalogue_files

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

KILLS = 4
REQUESTS = 4
PROFILE, DRIVES = "lto8", 4
CARTRIDGES, FILES_PER_CARTRIDGE = 16, 25
FILES = CARTRIDGES * FILES_PER_CARTRIDGE
FILE_BYTES = 256 * 1024  # small files (the buffer holds real bytes) spread along the tape: locates cost time
SPACING_BYTES = 400 * 10**9
SCALE = 100.0  # a few seconds of wall time per cartridge: each leader dies with reads done and unreported
FOUND_STAGED = "files found staged in the buffer at a new term: completed, not read again"
TAKE_OVER_S = 60.0  # bounded: the standby leads at its next cycle (seconds on a loaded machine)
STALL_S = 60.0  # bounded: the run fails when no file has ended for this long
ACTIVE = sorted(state.value for state in FILE_ACTIVE)


def write_catalogue(path: Path) -> Path:
    rows = [
        f"/data/t{tape:02d}/f{n:02d}.root,{FILE_BYTES},T{tape:02d},{n * SPACING_BYTES}"
        for tape in range(CARTRIDGES)
        for n in range(FILES_PER_CARTRIDGE)
    ]
    path.write_text("\n".join([",".join(CSV_HEADER), *rows]) + "\n", encoding="utf-8")
    return path


def settings(url: str, data_dir: Path, read_log: Path, catalogue: Path, buffer: bool) -> dict[str, str]:
    return {
        "CAROUSEL_DATABASE_URL": url,
        "CAROUSEL_DATA_DIR": str(data_dir),
        "CAROUSEL_BUFFER__ENABLED": "true" if buffer else "false",
        "CAROUSEL_POLICY": "carousel",
        "CAROUSEL_CYCLE_INTERVAL_S": "0.25",
        "CAROUSEL_CLAIM_TIMEOUT_S": "5",  # a claim this old belongs to a dead leader
        "CAROUSEL_ADAPTER_OPTIONS__PROFILE": PROFILE,
        "CAROUSEL_ADAPTER_OPTIONS__DRIVES": str(DRIVES),
        "CAROUSEL_ADAPTER_OPTIONS__SCALE": str(SCALE),
        "CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__CSV": str(catalogue),
        "CAROUSEL_ADAPTER_OPTIONS__READ_LOG": str(read_log),
    }


@pytest.mark.parametrize("buffer", [True, False], ids=["buffer", "no-buffer"])
def test_leaders_killed_with_a_standby_read_each_file_once(
    postgres_databases, postgres_template, tmp_path, buffer
):
    url = postgres_databases.create(template=postgres_template)
    engine = make_engine(url, pool_size=2)
    factory = make_session_factory(engine)
    try:
        read_log = tmp_path / "reads.csv"
        catalogue = write_catalogue(tmp_path / "catalogue.csv")
        plain_url = url.render_as_string(hide_password=False)
        env = environment(settings(plain_url, tmp_path / "data", read_log, catalogue, buffer))
        clock = ManualClock()
        library = {"profile": PROFILE, "drives": DRIVES, "catalogue": {"csv": str(catalogue)}}
        catalogue_adapter = build_simulated_adapter(library, clock)
        files = catalogue_files(catalogue_adapter, FILES, clock.now())
        catalogue_adapter.close()
        paths = {f.path for f in files}
        per_request = FILES // REQUESTS
        for n in range(REQUESTS):
            add_request(factory, files[n * per_request : (n + 1) * per_request], clock.now())

        def by_state() -> Counter[str]:
            with factory() as session:
                rows = session.execute(
                    select(QueuedFileRow.state, func.count()).group_by(QueuedFileRow.state)
                )
                return Counter({state: count for state, count in rows})

        def unreported_reads() -> int:
            """SUBMITTED files the read log says reached disk: read by the library, not reported yet."""
            read = {line.path for line in read_log_lines(read_log)}
            with factory() as session:
                submitted = session.scalars(
                    select(QueuedFileRow.path).where(QueuedFileRow.state == "SUBMITTED")
                )
                return len(read.intersection(submitted))

        started = time.monotonic()
        processes: list[Watched] = []

        def start(n: int) -> Watched:
            process = scheduler(env, tmp_path / f"scheduler-{n:02d}.log")
            processes.append(process)
            process.wait_for(BANNER)
            return process

        kills: list[int] = []  # files read by the dead leader's library and not reported, at each kill
        try:
            leader = start(0)
            leader.wait_for(LEADS)
            standby = start(1)
            for n in range(KILLS):
                # kill the leader while its library has read files it has not reported yet
                freeze_inside(leader.process, lambda: unreported_reads() > 0)
                leader.kill()
                kills.append(unreported_reads())
                standby.wait_for(LEADS, timeout_s=TAKE_OVER_S)
                leader, standby = standby, start(n + 2)

            active = sum(by_state()[s] for s in ACTIVE)
            deadline = time.monotonic() + STALL_S
            while active:
                time.sleep(0.2)
                still = sum(by_state()[s] for s in ACTIVE)
                if still < active:  # progress: the watch starts again
                    active, deadline = still, time.monotonic() + STALL_S
                assert time.monotonic() < deadline, f"no file ended for {STALL_S:g} s: {by_state()}"
            elapsed = time.monotonic() - started
            assert not standby.events(LEADS)  # the last standby never led: one leader at a time
        finally:
            for process in processes:
                if process.process.poll() is None:
                    process.kill()

        assert by_state() == Counter({"STAGED": FILES})
        with factory() as session:
            links = Counter(session.scalars(select(RequestFile.state)))
            requests = Counter(session.scalars(select(StageRequest.state)))
        assert links == Counter({LinkState.COMPLETED.value: FILES})
        assert requests == Counter({"DONE": REQUESTS})

        lines = read_log_lines(read_log)
        tape_reads = Counter(line.path for line in lines if line.source == TAPE)
        twice = sorted(path for path, count in tape_reads.items() if count > 1)
        assert not twice, f"{len(twice)} of {FILES} files read from tape more than once: {twice[:5]}"
        assert set(tape_reads) == paths  # each read from tape exactly once
        from_disk = sum(1 for line in lines if line.source == DISK)
        found_staged = sum(r["files"] for p in processes for r in p.events(FOUND_STAGED))
        print(
            f"\nbuffer {'on' if buffer else 'off'}: {KILLS} kills leaving {kills} files read, unreported;"
            f" {found_staged} found staged in the buffer by the next leader, {from_disk} answered"
            f" from disk by its library; {FILES} files read from tape once each; {elapsed:.0f} s"
        )
        assert sum(kills) > 0  # some kill left files read and unreported: the danger was there
        if buffer:
            # the next leader took every file a dead library had staged from the buffer: none went back to
            # a library, so none was answered from disk either
            assert found_staged > 0 and from_disk == 0
        else:
            assert found_staged == 0 and from_disk > 0
    finally:
        engine.dispose()
        postgres_databases.drop(url)
