"""A short run of the load test (bench/load_test.py): 20 clients, each with its own bearer token,
submitting and polling for 5 s against `carousel serve` on PostgreSQL over loopback. No call may fail."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import make_url

from bench.load_test import run_load
from tests.integration.conftest import ADMIN_URL_ENV, DEFAULT_ADMIN_URL

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_twenty_clients_for_five_seconds_without_an_error() -> None:
    admin_url = make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL))
    baseline, loaded = run_load(clients=20, duration_s=5.0, baseline_s=1.0, admin_url=admin_url)
    assert baseline.errors == 0, baseline.error_samples
    assert loaded.errors == 0, loaded.error_samples
    assert len(loaded.latencies["stage"]) >= 20  # every client got at least one request in
    assert len(loaded.latencies["status"]) >= 20  # and polled it
    # the cores each kind of process used: the service and its database worked, the generator too
    assert set(loaded.cores) == {"service", "postgresql", "generator"}
    assert all(cores > 0 for cores in loaded.cores.values()), loaded.cores


def test_a_missing_package_is_one_line_and_exit_2() -> None:
    hide_aiohttp = "import sys, runpy; sys.modules['aiohttp'] = None; runpy.run_module('bench.load_test')"
    done = subprocess.run(
        [sys.executable, "-c", hide_aiohttp], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "bench.load_test needs the development install (aiohttp is missing): make .venv/.installed"
    ]
