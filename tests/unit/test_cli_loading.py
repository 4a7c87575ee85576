"""`carousel` loads only what a command needs: talking to a running service must not wait for the service's
own stack (measured: importing carousel.cli.app took 1.7 s with it, 0.24 s without)."""

from __future__ import annotations

import subprocess
import sys

from carousel.cli.report import KIND_NAMES
from carousel.reports.catalog import KINDS

SERVICE_STACK = ("alembic", "fastapi", "matplotlib", "numpy", "scipy", "sqlalchemy", "uvicorn")


def test_the_command_line_loads_without_the_services_stack() -> None:
    probe = f"import sys, carousel.cli.app\nprint(' '.join(m for m in {SERVICE_STACK!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert loaded.stdout.strip() == "", f"imported by `carousel` for every command: {loaded.stdout}"


def test_the_report_commands_help_names_every_kind() -> None:
    assert tuple(KINDS) == KIND_NAMES
