"""The data path with the real xrootd: `xrdfs prepare -s` stages through carousel (the prepare program), and
`xrdcp root://…` then reads the same bytes from xrootd itself, which serves carousel's disk buffer through
`oss.localroot` (docs/xrootd.md). Everything runs in a private network namespace, as in test_xrootd; the
library is built from a directory of real files, so the bytes read are compared with their source."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.support import carousel_program, service_environment, write_carousel_config
from tests.clients.test_xrootd import (
    CAROUSEL_PORT,
    XROOTD_PORT,
    Namespace,
    _program_config,
    _xrootd_instance,
    query,
    running_namespace,
    stage,
    wait_for,
)

pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("xrootd")]

PATHS = ["/cms/store/run7/a.root", "/cms/store/run7/b.root"]


def content(path: str) -> bytes:
    rng = random.Random(path)
    return rng.randbytes(rng.randint(100_000, 300_000))


def _spec(work: Path) -> Path:
    for n, path in enumerate(PATHS):
        file = work / "tapes" / f"T{n:05d}" / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content(path))
    # the buffer is xrootd's oss.localroot (work/data): carousel lands files there, xrootd serves them
    buffer = {"enabled": True, "directory": str(work / "data"), "capacity_bytes": 64 * 1024 * 1024}
    library = {
        "profile": "lto8",
        "drives": 2,
        "catalogue": {"directory": str(work / "tapes")},
        "scale": 1000.0,
    }
    program = work / "carousel-xrootd-prepare"
    program.write_text(f'#!/bin/sh\nexec {carousel_program("carousel-xrootd-prepare")} "$@"\n')
    program.chmod(0o755)
    env = service_environment(write_carousel_config(work, port=CAROUSEL_PORT, library=library, buffer=buffer))
    live = _program_config(work, "prepare.toml", f"http://127.0.0.1:{CAROUSEL_PORT}")
    spec = {
        "workdir": str(work),
        "carousel_port": CAROUSEL_PORT,
        "carousel_url": f"http://127.0.0.1:{CAROUSEL_PORT}",
        "carousel_env": env,
        "client_env": env,
        "xrootds": [_xrootd_instance(work, XROOTD_PORT, program, live, env)],
    }
    path = work / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.fixture(scope="module")
def namespace() -> Iterator[Namespace]:
    if shutil.which("xrootd") is None or shutil.which("xrdcp") is None:
        pytest.fail("xrootd and xrdcp are missing: run scripts/system-deps.sh (xrootd-server, xrootd-client)")
    work = Path(tempfile.mkdtemp(prefix="carousel-xrootd-data-"))  # not pytest's: xrootd runs as nobody
    work.chmod(0o755)
    (work / "data").mkdir(mode=0o755)
    with running_namespace(_spec(work), work) as driver:
        yield driver


def test_prepare_then_xrdcp_reads_the_staged_bytes_from_the_buffer(namespace: Namespace) -> None:
    request_id = stage(namespace, *PATHS)
    wait_for(
        "every file COMPLETED",
        lambda: query(namespace, request_id).file_states(),
        lambda states: all(states.get(p) == ["COMPLETED"] for p in PATHS),
    )
    for n, path in enumerate(PATHS):
        out = namespace.work / f"copy-{n}"
        done = namespace.run("xrdcp", "--force", f"root://127.0.0.1:{XROOTD_PORT}/{path}", str(out))
        assert done.rc == 0, done
        assert out.read_bytes() == content(path)
        assert zlib.adler32(out.read_bytes()) == zlib.adler32(content(path))
    # nothing half written was ever under the served tree: the incoming directory is a sibling
    assert (namespace.work / "data.incoming").is_dir()
    assert not list((namespace.work / "data.incoming").iterdir())
