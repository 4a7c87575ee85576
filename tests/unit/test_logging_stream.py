"""The log's default stream is standard error as it is when each record comes: a command run in-process with
its output captured (the CLI's tests) replaces sys.stderr and closes it after, and a thread of a served app
logging later must write to the standard error of then, not fail on the closed one."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from carousel.logging import configure_logging


def test_records_go_to_standard_error_as_it_is_when_they_come(monkeypatch: pytest.MonkeyPatch) -> None:
    first, then = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("console")
    logging.getLogger("carousel.test").warning("while captured")
    assert "while captured" in first.getvalue()
    first.close()
    monkeypatch.setattr(sys, "stderr", then)
    logging.getLogger("carousel.test").warning("after")
    assert "after" in then.getvalue()
    assert "Logging error" not in then.getvalue()


def test_a_stream_given_is_kept() -> None:
    given = io.StringIO()
    configure_logging("json", stream=given)
    logging.getLogger("carousel.test").warning("to the given stream")
    assert '"event": "to the given stream"' in given.getvalue()
