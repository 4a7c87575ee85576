"""What the data path costs on top of moving the bytes: files staged through carousel into the disk buffer and
read back over HTTP, against `cp` of the same bytes on the same disk, measured in the same run.

The service's own pieces run in this process: a SQLite database, the scheduler's cycle with the disk buffer
on, the simulated library built from a directory of real files (its tape physics on a manual clock, so only
the data path costs wall time: the library writes each file at its destination, carousel verifies its adler32,
fsyncs and renames it into the buffer), and the API served by uvicorn on a loopback port, read by curl,
which writes each file to disk.

Baselines: `cp` of every file to a directory on the same disk (one copy, what the library's write is), and
`cp` again (what a client's read is); the data path does a copy, a verifying read and fsync, and a copy.

Run: .venv/bin/python -m bench.bench_data_path  (options: --files, --mb)
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

from carousel.api.app import create_app
from carousel.config import BufferSettings, Settings
from carousel.db.engine import make_engine, make_session_factory, transaction, upgrade_to_head
from carousel.db.models import StageRequest
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import build_simulated_adapter
from policies.registry import build_policy
from tests.integration.live_server import serving

CHUNK = 1024 * 1024
STEP_S = 60.0  # library seconds per cycle: the tape physics costs no wall time
MAX_CYCLES = 100_000


def make_tapes(root: Path, files: int, size: int) -> list[str]:
    paths = []
    rng = random.Random(1)
    block = rng.randbytes(CHUNK)
    for n in range(files):
        path = f"/bench/run{n % 4}/f{n:04d}.root"
        file = root / f"T{n % 4:05d}" / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        with file.open("wb") as out:
            for k in range(size // CHUNK):
                out.write(bytes([n % 256, k % 256]) + block[2:])  # distinct files, cheap to make
        paths.append(path)
    return paths


def cp_all(sources: list[Path], target: Path) -> float:
    target.mkdir()
    started = time.perf_counter()
    for n, source in enumerate(sources):
        subprocess.run(["cp", str(source), str(target / f"{n}")], check=True)
    subprocess.run(["sync"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--mb", type=int, default=16, help="size of each file in MiB")
    args = parser.parse_args()
    size = args.mb * CHUNK

    with tempfile.TemporaryDirectory(
        dir=Path.cwd() / "var" if (Path.cwd() / "var").is_dir() else None
    ) as tmp:
        work = Path(tmp)
        paths = make_tapes(work / "tapes", args.files, size)
        sources = sorted((work / "tapes").rglob("*.root"))
        total = args.files * size
        subprocess.run(["sync"], check=True)

        url = f"sqlite:///{work / 'carousel.sqlite3'}"
        upgrade_to_head(url)
        engine = make_engine(url)
        factory = make_session_factory(engine)
        clock = ManualClock()
        buffer = BufferSettings(directory=work / "buffer", capacity_bytes=4 * total)
        settings = Settings(database_url=url, buffer=buffer)
        library = {"profile": "lto8", "drives": 4, "catalogue": {"directory": str(work / "tapes")}}
        adapter = build_simulated_adapter(library, clock)
        cycle = Cycle(settings, factory, adapter, build_policy("fifo", None), clock)

        # staging: intake, cycles until every file is COMPLETED (bytes written, verified, renamed, fsynced)
        started = time.perf_counter()
        order = StageOrder(
            paths=tuple(paths), api=Api.TAPE_REST, list_field="files", path_field="files[{}].path"
        )
        with transaction(factory) as session:
            request_id = submit(
                session,
                adapter,
                clock,
                ANONYMOUS,
                order,
                max_files=100_000,
                max_path_bytes=4096,
                buffer=buffer,
            ).request_id
        for _ in range(MAX_CYCLES):
            cycle.run_once()
            with factory() as session:
                if session.get(StageRequest, request_id).state != "ACTIVE":  # type: ignore[union-attr]
                    break
            clock.advance(STEP_S)
        subprocess.run(["sync"], check=True)
        staging_s = time.perf_counter() - started

        # reading: every file over HTTP, written to disk by the client
        app = create_app(settings, adapter=adapter, clock=clock, session_factory=factory)
        (work / "read").mkdir()
        with serving(app) as base:
            started = time.perf_counter()
            for n, path in enumerate(paths):
                subprocess.run(["curl", "-sf", "-o", str(work / "read" / f"{n}"), base + path], check=True)
            subprocess.run(["sync"], check=True)
            reading_s = time.perf_counter() - started
        cycle.close()
        adapter.close()
        engine.dispose()

        copy_s = cp_all(sources, work / "cp1")
        copy_again_s = cp_all(sources, work / "cp2")

    mib = total / CHUNK
    print(f"{args.files} files of {args.mb} MiB ({mib:.0f} MiB), on the disk of {Path.cwd()}")
    print(f"cp baseline:        {copy_s:7.2f} s  {mib / copy_s:8.1f} MiB/s (again: {copy_again_s:.2f} s)")
    for name, seconds in (("staging (carousel)", staging_s), ("reading over HTTP", reading_s)):
        print(
            f"{name + ':':19} {seconds:7.2f} s {mib / seconds:7.1f} MiB/s ratio to cp {seconds / copy_s:.2f}"
        )
    both = staging_s + reading_s
    print(f"stage + read:       {both:7.2f} s  ratio to two cp {both / (copy_s + copy_again_s):5.2f}")


if __name__ == "__main__":
    main()
