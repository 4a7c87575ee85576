"""A PostgreSQL cluster of a test's own, to stop and start under a running service: the machine's shared
server is never touched (other tests and people use it).

initdb refuses to run as root, so as root the cluster belongs to the `postgres` user (runuser); as anyone
else it is the caller's. It listens on a free port of 127.0.0.1 only (no Unix socket), trusts local
connections, and lives in a temporary directory under /tmp that `remove()` deletes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.clients.support import free_port

PG_ROOT = Path("/usr/lib/postgresql")
TIMEOUT_S = 60


def postgres_binaries() -> Path:
    """The newest installed PostgreSQL's bin directory."""
    versions = sorted(
        (p for p in PG_ROOT.glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise RuntimeError(f"no PostgreSQL server binaries under {PG_ROOT}: run `make system`")
    return versions[-1]


class ThrowawayPostgres:
    def __init__(self) -> None:
        self.bin = postgres_binaries()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="carousel-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        self.running = False

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
            )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start")
        self.running = True

    def stop(self) -> None:
        """A fast shutdown: sessions are cut, what was committed is kept."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.running = False

    def create_database(self, name: str) -> str:
        engine = create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.url(name)

    def remove(self) -> None:
        if self.running:
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
