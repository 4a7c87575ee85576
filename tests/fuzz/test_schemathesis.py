"""schemathesis against the service's own OpenAPI document, in-process through the ASGI app: no call may
answer 5xx, and every answer must match the status codes, media types, headers and bodies the document
declares. One test per operation; the example count is bounded so the whole run takes about a minute.

(schemathesis' lazy pytest fixture does not run on pytest 9, so each operation's cases are drawn here with
hypothesis from `operation.as_strategy()`.)"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.orm import sessionmaker

from carousel.api.app import create_app
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.fuzz.conftest import LIBRARY, fuzzed_settings

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES = 60


def _documented_operations() -> list[tuple[str, str]]:
    """(method, path) of every operation the document declares, read from an app without a database."""
    clock = ManualClock()
    adapter = build_simulated_adapter(LIBRARY, clock)
    try:
        settings = fuzzed_settings(Path(tempfile.gettempdir()))  # the directory is never written to here
        app = create_app(settings, adapter=adapter, clock=clock, session_factory=sessionmaker())
        paths: dict[str, dict[str, Any]] = app.openapi()["paths"]
    finally:
        adapter.close()
    return [(method.upper(), path) for path, methods in sorted(paths.items()) for method in sorted(methods)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "operation" in metafunc.fixturenames:
        operations = _documented_operations()
        metafunc.parametrize("operation", operations, ids=[f"{m} {p}" for m, p in operations])


def test_the_operation_keeps_the_documents_promises(
    api_schema: schemathesis.schemas.BaseSchema, operation: tuple[str, str]
) -> None:
    method, path = operation
    api_operation = api_schema[path][method]

    @given(case=api_operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same examples every run: a failure here reproduces, it is not a flake
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def calls(case: schemathesis.Case) -> None:
        case.call_and_validate(checks=CHECKS)

    calls()
