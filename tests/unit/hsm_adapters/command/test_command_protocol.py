"""The lines HSM programs print: what is accepted, and how a wrong line is described."""

from __future__ import annotations

import json

import pytest

from hsm_adapters.command.protocol import (
    BadLine,
    LookupNotOnTapeLine,
    LookupOnTapeLine,
    LookupUnknownLine,
    StageFileLine,
    StageTapeLine,
    parse_cancel_line,
    parse_health_line,
    parse_lookup_line,
    parse_stage_line,
    request_lines,
)

ON_TAPE = {"path": "/p", "status": "ON_TAPE", "tape": "T1", "position_bytes": 10, "size_bytes": 5}


def line(**fields: object) -> str:
    return json.dumps(fields)


def test_lookup_answers_of_each_kind():
    assert parse_lookup_line(1, line(**ON_TAPE, on_disk=True, note="extra is ignored")) == LookupOnTapeLine(
        path="/p", status="ON_TAPE", tape="T1", position_bytes=10, size_bytes=5, on_disk=True
    )
    assert parse_lookup_line(1, line(**ON_TAPE, checksum="0A1b2C3d")) == LookupOnTapeLine(
        path="/p", status="ON_TAPE", tape="T1", position_bytes=10, size_bytes=5, checksum="0A1b2C3d"
    )
    assert parse_lookup_line(2, line(path="/q", status="NOT_ON_TAPE")) == LookupNotOnTapeLine(
        path="/q", status="NOT_ON_TAPE", reason="the HSM holds no tape copy", on_disk=False
    )
    assert parse_lookup_line(
        3, line(path="/r", status="UNKNOWN", reason="tape unreadable")
    ) == LookupUnknownLine(path="/r", status="UNKNOWN", reason="tape unreadable")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("/p\tT1\t10\t5", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (line(path="/p", status="SOMEWHERE"), "status must be ON_TAPE, NOT_ON_TAPE or UNKNOWN"),
        (
            line(**{**ON_TAPE, "position_bytes": -1}),
            "position_bytes: Input should be greater than or equal to 0",
        ),
        (line(**{**ON_TAPE, "position_bytes": "10"}), "position_bytes: Input should be a valid integer"),
        (line(**{**ON_TAPE, "size_bytes": 5.5}), "size_bytes: Input should be a valid integer"),
        (line(**{**ON_TAPE, "on_disk": 1}), "on_disk: Input should be a valid boolean"),
        (line(**{**ON_TAPE, "tape": ""}), "tape: String should have at least 1 character"),
        (line(path="/p", status="ON_TAPE", tape="T1", size_bytes=5), "position_bytes: Field required"),
    ],
)
def test_a_wrong_lookup_line_says_what_is_wrong(text, problem):
    bad = parse_lookup_line(7, text)
    assert isinstance(bad, BadLine)
    assert bad.describe().startswith(f"unparseable line 7 ({problem}")
    assert repr(text[:20])[1:-1] in bad.describe()


def test_stage_lines_are_files_or_tape_events():
    assert parse_stage_line(1, line(key="k", status="STAGED", bytes=3)) == StageFileLine(
        key="k", status="STAGED", bytes=3
    )
    assert parse_stage_line(2, line(event="MOUNTED", tape="T1", drive="d0")) == StageTapeLine(
        event="MOUNTED", tape="T1", drive="d0"
    )
    failed = parse_stage_line(3, line(key="k", status="FAILED", reason="bad block", retryable=False))
    assert isinstance(failed, StageFileLine) and (failed.reason, failed.retryable) == ("bad block", False)
    assert isinstance(parse_stage_line(4, line(key="k", status="DONE")), BadLine)
    assert isinstance(parse_stage_line(5, line(event="EJECTED")), BadLine)


def test_cancel_and_health_lines():
    assert not isinstance(parse_cancel_line(1, line(key="k", status="IN_PROGRESS")), BadLine)
    assert isinstance(parse_cancel_line(2, line(key="k", status="MAYBE")), BadLine)
    assert not isinstance(parse_health_line(1, line(health="DEGRADED", reason="robot 2 down")), BadLine)
    assert isinstance(parse_health_line(2, line(health="FINE")), BadLine)


def test_a_long_bad_line_is_quoted_short():
    bad = parse_stage_line(1, "x" * 10_000)
    assert isinstance(bad, BadLine) and len(bad.describe()) < 200


def test_requests_are_one_json_object_per_line_whatever_the_path_holds():
    odd = "/star/tab\there/space and ünïcödé/new\nline.root"
    data = request_lines([{"path": odd}, {"path": "/plain"}])
    lines = data.decode().split("\n")
    assert lines[-1] == "" and len(lines) == 3
    assert [json.loads(text)["path"] for text in lines[:2]] == [odd, "/plain"]


def test_a_checksum_is_eight_hex_digits_or_the_line_is_bad():
    staged = {"key": "k", "status": "STAGED", "bytes": 5}
    assert parse_stage_line(1, line(**staged, checksum="deadBEEF")) == StageFileLine(
        key="k", status="STAGED", bytes=5, checksum="deadBEEF"
    )
    for wrong in ("adler32:1234", "1234", "deadbeef0", "ghijklmn", 123):
        bad = parse_stage_line(1, line(**staged, checksum=wrong))
        assert isinstance(bad, BadLine) and "checksum" in bad.problem, wrong
