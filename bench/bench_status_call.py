"""What one status call costs against the cheapest call the same server can answer.

`carousel api` on PostgreSQL (a throwaway database) serves a 100-file request's Tape REST status and its
native status (summary and outlook); beside it, in a process of its own, the same uvicorn with carousel's
own server configuration serves a trivial FastAPI route answering a body of the Tape REST status's size.
`--concurrency` clients (httpx, asyncio, in this process) call one of them as fast as it answers for
`--duration` seconds; the trivial route is measured first and last and its mean is the baseline. Printed:
calls/s of each, and each status's ratio to the baseline. Anonymous calls, rates off, the status cache
unused (100 files is below status_cache_min_files): each call does all its work.

Run: .venv/bin/python -m bench.bench_status_call [--files 100] [--concurrency 20] [--duration 10]
(PostgreSQL admin URL from CAROUSEL_BENCH_DATABASE_URL, default postgresql+psycopg://postgres@127.0.0.1:5432/
postgres.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx
import tomli_w
from sqlalchemy import make_url

from bench.load_test import (
    ADMIN_URL_ENV,
    DEFAULT_ADMIN_URL,
    LIBRARY,
    _free_port,
    _stop,
    _wait_ready,
    library_paths,
    throwaway_database,
)
from carousel.db.engine import upgrade_to_head

TRIVIAL_SERVER = """
import sys
import uvicorn
from fastapi import FastAPI, Response
from carousel.api.http_server import server_config
from carousel.config import load_settings
from carousel.observability.metrics import ServiceMetrics

port, size = int(sys.argv[1]), int(sys.argv[2])
body = b"[" + b"0" * (size - 2) + b"]"
app = FastAPI()

@app.get("/readyz")
def ready() -> dict[str, str]:
    return {"status": "ready"}

@app.get("/doc")
def doc() -> Response:
    return Response(body, media_type="application/json")

config = server_config(app, load_settings(), ServiceMetrics())
config.host, config.port = "127.0.0.1", port
uvicorn.Server(config).run()
"""


def calls_per_s(url: str, concurrency: int, duration_s: float) -> float:
    """Calls answered 200 per second by `concurrency` clients calling `url` back to back."""
    answered = 0

    async def client(http: httpx.AsyncClient, deadline: float) -> None:
        nonlocal answered
        while time.monotonic() < deadline:
            response = await http.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: {response.status_code} {response.text[:300]}")
            answered += 1

    async def run() -> None:
        limits = httpx.Limits(max_connections=concurrency, keepalive_expiry=2.0)
        async with httpx.AsyncClient(limits=limits, timeout=60) as http:
            deadline = time.monotonic() + duration_s
            async with anyio.create_task_group() as group:
                for _ in range(concurrency):
                    group.start_soon(client, http, deadline)

    started = time.monotonic()
    anyio.run(run)
    return answered / (time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of each measurement")
    args = parser.parse_args()
    admin_url = make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL))
    carousel = str(Path(sys.executable).with_name("carousel"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and "proxy" not in k.lower()}
    with throwaway_database(admin_url) as database_url, tempfile.TemporaryDirectory() as tmp:
        upgrade_to_head(database_url)
        port, trivial_port = _free_port(), _free_port()
        config = Path(tmp) / "carousel.toml"
        settings = {
            "database_url": database_url.render_as_string(hide_password=False),
            "host": "127.0.0.1",
            "port": port,
            "adapter_options": LIBRARY,
            "buffer": {"enabled": False},
        }
        config.write_text(tomli_w.dumps(settings))
        env["CAROUSEL_CONFIG"] = str(config)
        log = Path(tmp) / "api.log"
        with log.open("wb") as sink:
            api = subprocess.Popen([carousel, "api"], env=env, stdout=sink, stderr=subprocess.STDOUT)
        trivial: subprocess.Popen[bytes] | None = None
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_ready(base, api, log)
            files = [{"path": path} for path in library_paths()[: args.files]]
            request_id = httpx.post(f"{base}/api/v1/stage", json={"files": files}).json()["requestId"]
            size = len(httpx.get(f"{base}/api/v1/stage/{request_id}").content)
            with log.open("ab") as sink:
                trivial = subprocess.Popen(
                    [sys.executable, "-c", TRIVIAL_SERVER, str(trivial_port), str(size)],
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            trivial_base = f"http://127.0.0.1:{trivial_port}"
            _wait_ready(trivial_base, trivial, log)

            def measure(url: str) -> float:
                return calls_per_s(url, args.concurrency, args.duration)

            first = measure(f"{trivial_base}/doc")
            tape_rest = measure(f"{base}/api/v1/stage/{request_id}")
            native = measure(f"{base}/api/native/v1/requests/{request_id}")
            last = measure(f"{trivial_base}/doc")
        finally:
            for process in (api, trivial):
                if process is not None:
                    _stop(process)
    baseline = (first + last) / 2
    print(
        f"{args.files}-file request, {args.concurrency} clients, {args.duration:g} s each; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  trivial route, {size} bytes  {first:7.0f} then {last:7.0f} calls/s (baseline {baseline:.0f})")
    for label, rate in (("Tape REST status", tape_rest), ("native status (outlook)", native)):
        print(f"  {label:25s} {rate:7.0f} calls/s  ratio to baseline {rate / baseline:5.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
