"""The replay's disk buffer (accounting only): work waits for space and never fails, pins hold files until
clients release them, evicted files asked for again are recalled again, a file larger than the buffer fails at
intake, and the outputs say no bytes were written."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.domain.buffer import BufferLimits
from carousel.domain.errors import ConfigError
from carousel.domain.states import FileState
from carousel.replay.driver import ReplayConfig, replay
from carousel.replay.outputs import write_outputs
from carousel.replay.trace import Trace, TraceRow, load_trace, make_trace, write_trace

MB = 10**6
SIZE = 100 * MB
TEN_FILES = BufferLimits(10 * SIZE, high_watermark=1.0, low_watermark=0.8)


def one_request(files: int, *, hold_s: float | None = None) -> Trace:
    """One request for `files` files of 100 MB on two cartridges, all at once."""
    rows = [
        TraceRow(
            0.0, "bulk", f"/data/{n:03d}", SIZE, f"T{n % 2}", (n // 2) * 2 * SIZE, release_after_s=hold_s
        )
        for n in range(files)
    ]
    return make_trace(rows, "bulk")


def config(**changes) -> ReplayConfig:
    return ReplayConfig(profile="lto8", drives=2, policy="carousel", cycle_interval_s=10.0, **changes)


def test_a_request_larger_than_the_buffer_completes_as_clients_release(tmp_path):
    result = replay(one_request(200), config(buffer=TEN_FILES, release_after_s=30.0))
    summary = write_outputs(result, tmp_path)

    assert {row.state for row in result.store.rows} == {FileState.STAGED}
    assert summary["failed"] == 0 and summary["files"] == 200
    assert result.store.buffer is not None
    assert 10 * SIZE >= result.store.buffer.peak_on_disk_bytes > 5 * SIZE  # never more than 10 files
    assert summary["buffer"]["mode"] == "accounting only"
    assert summary["buffer"]["evicted_files"] >= 190
    assert json.loads((tmp_path / "summary.json").read_text())["buffer"]["capacity_bytes"] == 10 * SIZE


def test_without_a_buffer_nothing_waits_for_space():
    unlimited = replay(one_request(40), config())
    assert unlimited.store.buffer is None
    limited = replay(one_request(40), config(buffer=TEN_FILES, release_after_s=600.0))
    ends = [max(o.end for o in r.store.rows if o.end is not None) for r in (unlimited, limited)]
    assert ends[1] > ends[0] + timedelta(seconds=600)  # the buffer, not the drives, set the pace


def test_pins_that_are_never_released_hold_the_rest_back_without_failing():
    with pytest.raises(ConfigError, match="waiting for space in the disk buffer"):
        replay(one_request(30), config(buffer=TEN_FILES, release_after_s=1e9))


def test_a_file_evicted_and_asked_for_again_is_recalled_again():
    rows = [TraceRow(0.0, "first", f"/data/{n:03d}", SIZE, "T0", n * 2 * SIZE) for n in range(12)]
    rows.append(TraceRow(5000.0, "again", "/data/000", SIZE, "T0", 0))  # evicted by then
    result = replay(make_trace(rows, "again"), config(buffer=TEN_FILES))
    recalls = [f for f in result.store.files if f.path == "/data/000"]
    assert [f.state for f in recalls] == [FileState.STAGED, FileState.STAGED]
    assert result.store.rows[-1].start is not None and result.store.rows[-1].start.timestamp() > 0
    assert result.store.rows[-1].end != result.store.rows[-1].start  # read from tape, not answered at once


def test_a_file_on_disk_asked_for_again_is_answered_at_once():
    rows = [TraceRow(0.0, "first", "/data/000", SIZE, "T0", 0)]
    rows.append(TraceRow(3000.0, "again", "/data/000", SIZE, "T0", 0))
    result = replay(make_trace(rows, "hit"), config(buffer=TEN_FILES))
    assert len(result.store.files) == 1
    again = result.store.rows[-1]
    assert again.state is FileState.STAGED and again.start == again.end


def test_a_file_larger_than_the_buffer_fails_at_intake():
    rows = [
        TraceRow(0.0, "big", "/data/big", 11 * SIZE, "T0", 0),
        TraceRow(0.0, "ok", "/data/ok", SIZE, "T0", 20 * SIZE),
    ]
    result = replay(make_trace(rows, "big"), config(buffer=TEN_FILES))
    assert [row.state for row in result.store.rows] == [FileState.FAILED, FileState.STAGED]


def test_the_trace_column_of_release_times_round_trips(tmp_path):
    trace = one_request(4, hold_s=12.5)
    write_trace(trace, tmp_path / "trace.csv")
    assert (tmp_path / "trace.csv").read_text().splitlines()[0].endswith(",release_after_s")
    assert [row.release_after_s for row in load_trace(tmp_path / "trace.csv").rows] == [12.5] * 4


def test_a_bad_release_time_names_its_column(tmp_path):
    path = tmp_path / "trace.csv"
    header = "arrival_s,request,path,size_bytes,tape,position_bytes,group,priority,release_after_s"
    path.write_text(f"{header}\n0,r,/a,1,T,0,,,-3\n")
    with pytest.raises(ConfigError, match="line 2: column release_after_s"):
        load_trace(path)


def test_the_command_line_models_a_buffer_and_says_it_writes_no_bytes(tmp_path):
    write_trace(one_request(30), tmp_path / "trace.csv")
    args = ["simulate", "--trace", str(tmp_path / "trace.csv"), "--profile", "lto8", "--drives", "2"]
    args += ["--buffer-bytes", str(10 * SIZE), "--release-after", "30", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "buffer: accounting only" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["buffer"]["mode"] == "accounting only" and summary["buffer"]["release_after_s"] == 30
    assert summary["buffer"]["peak_on_disk_bytes"] <= 10 * SIZE and summary["failed"] == 0
