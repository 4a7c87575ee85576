"""End to end on PostgreSQL: the service's rate of staged files against the replay's, and the database's CPU
per staged file.

One run: a fresh PostgreSQL database; `carousel api` and `carousel scheduler` started as processes on it,
over a simulated LTO-9 library of 64 drives whose clock runs so fast (scale 10^5: a mount is a millisecond
of wall time) that the library never limits; FILES files (default 50,000, 500 cartridges) submitted in
REQUESTS native bulk requests (default 10) as fast as the API takes them; the clock stops when the database
says every file ended. Then `carousel simulate` replays the same trace (the same files, tapes, positions and
requests, all arriving at second 0) through the same planning code, with the service's settings
(`--service-settings`), timed the same way (its process from start to exit).

Printed: the service's files per second, the replay's, their ratio, and PostgreSQL's CPU per staged file:
user + system CPU of the backends serving the scheduler and the API, read from /proc/<pid>/stat of each
backend (found through pg_stat_activity by the application_name each process connects with; sampled every
SAMPLE_S, a backend's last sample counts). pg_stat_statements is not used: it needs a server restart. Also the
carousel processes' own CPU, and a profile of the scheduler's database time: the share of samples in which
its backends were running each statement (pg_stat_activity, state active).

Run: .venv/bin/python -m bench.bench_end_to_end [--files 50000] [--requests 10]
(PostgreSQL admin URL from CAROUSEL_BENCH_DATABASE_URL, default postgresql+psycopg://postgres@127.0.0.1:5432/
postgres; a throwaway database is created and dropped.) `--files 5000` is a quick run.
"""

from __future__ import annotations

import argparse
import csv
import os
import pstats
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.engine import URL

from bench.load_test import ADMIN_URL_ENV, DEFAULT_ADMIN_URL, _free_port, _wait_ready, throwaway_database
from hsm_adapters.simulated.catalogue import generate_catalogue, write_catalogue_csv
from hsm_adapters.simulated.profiles import load_profile

PROFILE = "lto9"
DRIVES = 64
SCALE = 100_000.0
FILES_PER_CARTRIDGE = 100
SAMPLE_S = 0.1
TIMEOUT_S = 3_600.0
TICKS = os.sysconf("SC_CLK_TCK")
APPS = {"scheduler": "e2e-scheduler", "api": "e2e-api"}
ENDED = "('STAGED', 'FAILED', 'CANCELLED')"


@dataclass
class Run:
    files: int
    requests: int
    service_s: float = 0.0
    replay_s: float = 0.0
    failed: int = 0
    backend_cpu_s: dict[str, float] = field(default_factory=dict)  # by process (scheduler, api)
    process_cpu_s: dict[str, float] = field(default_factory=dict)
    statements: Counter[str] = field(default_factory=Counter)  # the scheduler's active backends, by statement
    samples: int = 0


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


_LITERALS = re.compile(r"\$\d+|'[^']*'|\b\d+\b")


def _statement(query: str) -> str:
    """A statement's first words, parameters folded, so samples of one statement count together."""
    words = " ".join(_LITERALS.sub("?", query).split())
    return words[:110]


class Sampler:
    """Every SAMPLE_S: the CPU of each backend of the run's processes and what the scheduler's run."""

    def __init__(self, engine: Engine, run: Run, processes: dict[str, subprocess.Popen[bytes]]) -> None:
        self.engine = engine
        self.run = run
        self.processes = processes
        self.start: dict[int, float] = {}  # backend pid -> CPU when measuring began (0 if it began later)
        self.last: dict[int, tuple[str, float]] = {}  # backend pid -> (process, CPU at its last sample)
        self.process_start: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def begin(self) -> None:
        self._sample(counting=False)
        self.start = {pid: cpu for pid, (_, cpu) in self.last.items()}
        self.process_start = {name: _cpu_s(p.pid) or 0.0 for name, p in self.processes.items()}
        self._thread.start()

    def end(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(counting=False)
        for pid, (name, cpu) in self.last.items():
            used = cpu - self.start.get(pid, 0.0)
            self.run.backend_cpu_s[name] = self.run.backend_cpu_s.get(name, 0.0) + used
        for name, process in self.processes.items():
            self.run.process_cpu_s[name] = (_cpu_s(process.pid) or 0.0) - self.process_start[name]

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample(counting=True)

    def _sample(self, *, counting: bool) -> None:
        names = {app: name for name, app in APPS.items()}
        with self.engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT pid, application_name, state, query FROM pg_stat_activity"
                    " WHERE application_name IN ('e2e-scheduler', 'e2e-api')"
                )
            ).all()
        for pid, app, state, query in rows:
            cpu = _cpu_s(pid)
            if cpu is not None:
                self.last[pid] = (names[app], cpu)
            if counting and app == APPS["scheduler"]:
                self.run.samples += 1
                label = _statement(query or "") if state == "active" else f"({state})"
                self.run.statements[label] += 1


def _catalogue(directory: Path, files: int) -> tuple[Path, list[tuple[str, int, str, int]]]:
    cartridges = max(1, -(-files // FILES_PER_CARTRIDGE))
    catalogue = generate_catalogue(1, cartridges, FILES_PER_CARTRIDGE, "star2006", load_profile(PROFILE))
    path = directory / "catalogue.csv"
    write_catalogue_csv(catalogue, path)
    with path.open(encoding="utf-8") as stream:
        rows = [
            (r["path"], int(r["size_bytes"]), r["tape"], int(r["position_bytes"]))
            for r in csv.DictReader(stream)
        ]
    return path, rows[:files]


def _config(directory: Path, database_url: URL, port: int, catalogue: Path, files: int) -> Path:
    lines = [
        f'database_url = "{database_url.render_as_string(hide_password=False)}"',
        'host = "127.0.0.1"',
        f"port = {port}",
        f'data_dir = "{directory / "data"}"',
        "",
        "[buffer]  # accounting only: the catalogue's files are multi-GB",
        "enabled = false",
        "",
        "[adapter_options]",
        f'profile = "{PROFILE}"',
        f"drives = {DRIVES}",
        f"scale = {SCALE}",
        f'catalogue = {{csv = "{catalogue}"}}',
        f"queue_depth = {{default = {files}}}  # the library takes all it is given: it never limits",
    ]
    config = directory / "carousel.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def _trace(directory: Path, requests: list[list[tuple[str, int, str, int]]]) -> Path:
    path = directory / "trace.csv"
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(
            ["arrival_s", "request", "path", "size_bytes", "tape", "position_bytes", "group", "priority"]
        )
        for number, files in enumerate(requests):
            for file_path, size, tape, position in files:
                writer.writerow([0, f"r{number}", file_path, size, tape, position, "", ""])
    return path


def _env(config: Path, database_url: URL | None = None, app: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()}
    env["CAROUSEL_CONFIG"] = str(config)
    if database_url is not None and app is not None:
        url = database_url.update_query_dict({"application_name": app})
        env["CAROUSEL_DATABASE_URL"] = url.render_as_string(hide_password=False)
    return env


@contextmanager
def _process(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _ended(engine: Engine) -> tuple[int, int]:
    with engine.connect() as connection:
        row = connection.execute(
            text(
                f"SELECT count(*) FILTER (WHERE state IN {ENDED}),"
                " count(*) FILTER (WHERE state <> 'STAGED') FROM files"
            )
        ).one()
    return int(row[0]), int(row[1])


def run(
    files: int, request_count: int, admin_url: URL, logs: Path | None = None, profile: Path | None = None
) -> Run:
    result = Run(files, request_count)
    carousel = str(Path(sys.executable).with_name("carousel"))
    with tempfile.TemporaryDirectory(prefix="carousel-e2e-") as tmp, throwaway_database(admin_url) as db_url:
        directory = Path(tmp)
        catalogue, rows = _catalogue(directory, files)
        random.Random(1).shuffle(rows)
        requests = [rows[n::request_count] for n in range(request_count)]
        port = _free_port()
        config = _config(directory, db_url, port, catalogue, files)
        subprocess.run([carousel, "db", "upgrade"], env=_env(config), check=True, capture_output=True)
        watch = create_engine(db_url.update_query_dict({"application_name": "e2e-bench"}), pool_size=1)
        url = f"http://127.0.0.1:{port}"
        api_log, scheduler_log = directory / "api.log", directory / "scheduler.log"
        scheduler_command = [carousel, "scheduler"]
        scheduler_env = _env(config, db_url, APPS["scheduler"])
        if profile is not None:  # every thread of the scheduler under cProfile (bench.profiled_scheduler)
            scheduler_command = [sys.executable, "-m", "bench.profiled_scheduler"]
            scheduler_env["CAROUSEL_BENCH_PROFILE"] = str(profile.absolute())
        with (
            _process([carousel, "api"], _env(config, db_url, APPS["api"]), api_log) as api,
            _process(scheduler_command, scheduler_env, scheduler_log) as sched,
        ):
            _wait_ready(url, api, api_log)
            sampler = Sampler(watch, result, {"api": api, "scheduler": sched})
            sampler.begin()
            started = time.perf_counter()
            with httpx.Client(base_url=url, timeout=600) as http:
                for files_of_request in requests:
                    answer = http.post(
                        "/api/native/v1/requests", json={"paths": [f[0] for f in files_of_request]}
                    )
                    if answer.status_code != 201:
                        raise SystemExit(f"submit: HTTP {answer.status_code}: {answer.text[:300]}")
            while True:
                ended, not_staged = _ended(watch)
                if ended >= files:
                    break
                if time.perf_counter() - started > TIMEOUT_S or sched.poll() is not None:
                    raise SystemExit(
                        f"{ended} of {files} files ended; scheduler log: {scheduler_log.read_text()[-2000:]}"
                    )
                time.sleep(SAMPLE_S)
            result.service_s = time.perf_counter() - started
            result.failed = not_staged
            sampler.end()
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            for log in (api_log, scheduler_log):
                shutil.copy(log, logs / log.name)
        watch.dispose()
        trace = _trace(directory, requests)
        started = time.perf_counter()
        replay = subprocess.run(
            [
                carousel,
                "simulate",
                "--trace",
                str(trace),
                "--profile",
                PROFILE,
                "--drives",
                str(DRIVES),
                "--policy",
                "carousel",
                "--service-settings",
                "--out",
                str(directory / "replay"),
            ],
            env=_env(config),
            check=False,
            capture_output=True,
            text=True,
        )
        result.replay_s = time.perf_counter() - started
        if replay.returncode != 0:
            raise SystemExit(f"carousel simulate failed: {replay.stderr[-2000:]}")
    return result


def report(result: Run) -> str:
    service_rate = result.files / result.service_s
    replay_rate = result.files / result.replay_s
    database = sum(result.backend_cpu_s.values())
    scheduler_ms = result.backend_cpu_s.get("scheduler", 0.0) / result.files * 1000
    lines = [
        f"{result.files} files in {result.requests} requests; {DRIVES} {PROFILE} drives, clock x{SCALE:g}",
        f"service: {result.service_s:.1f} s, {service_rate:.0f} files/s ({result.failed} not staged)",
        f"replay:  {result.replay_s:.1f} s, {replay_rate:.0f} files/s",
        f"ratio service / replay: {service_rate / replay_rate:.3f}",
        "PostgreSQL backend CPU (/proc/<pid>/stat of the run's backends): "
        + ", ".join(f"{name} {cpu:.1f} s" for name, cpu in sorted(result.backend_cpu_s.items())),
        f"database CPU per staged file: {database / result.files * 1000:.3f} ms"
        f" (the scheduler's backends alone {scheduler_ms:.3f} ms)",
        "carousel processes' CPU: "
        + ", ".join(f"{name} {cpu:.1f} s" for name, cpu in sorted(result.process_cpu_s.items())),
        f"the scheduler's backends, {result.samples} samples every {SAMPLE_S:g} s:",
    ]
    for statement, count in result.statements.most_common(12):
        lines.append(f"  {count / max(result.samples, 1):6.1%}  {statement}")
    return "\n".join(lines)


PROFILED = (
    "cycle.py:.*(run_once|_apply_events|_recover_claims|_resubmit_in_flight|_time_out_reads|_push_cancels)",
    "live_events.py:.*(pump|apply)",
    "apply.py:.*apply_events",
    "planning_path.py:.*dispatch",
    "live_snapshot.py:.*live_snapshot",
    "queue_store.py:.*(demand|claim|handed_over)",
    "resilient_store.py:.*record_unrecorded",
)


def profile_report(path: Path) -> str:
    """Wall seconds (cumulative) of the scheduler's steps in the profile: where its time goes."""
    stats = pstats.Stats(str(path))
    lines = ["the scheduler's steps under cProfile (cumulative wall seconds, calls):"]
    entries = stats.stats  # type: ignore[attr-defined]
    for pattern in PROFILED:
        wanted = re.compile(pattern)
        for (filename, line, name), (_, calls, _, cumulative, _) in sorted(
            entries.items(), key=lambda item: -item[1][3]
        ):
            if "carousel" in filename and wanted.search(f"{Path(filename).name}:{line}({name})"):
                lines.append(f"  {cumulative:8.2f} s  {calls:6d}  {Path(filename).name}:{name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--logs", type=Path, help="keep the API's and the scheduler's logs in this directory")
    parser.add_argument(
        "--profile",
        type=Path,
        help="run the scheduler under cProfile (every thread; slower) and write its statistics to this file",
    )
    args = parser.parse_args(argv)
    if args.files < args.requests or args.requests < 1:
        print("--files must be at least --requests, and --requests at least 1", file=sys.stderr)
        return 2
    admin_url = make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL))
    print(report(run(args.files, args.requests, admin_url, args.logs, args.profile)))
    if args.profile is not None:
        print(profile_report(args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
