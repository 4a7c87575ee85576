"""Replays end to end: every file read once, outputs that agree with each other, idle ticks skipped without
changing anything, reproducible runs, the command line."""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.replay.driver import ReplayConfig, replay
from carousel.replay.library_setup import LibraryFile
from carousel.replay.outputs import write_outputs
from carousel.replay.trace import Trace
from carousel.replay.workloads import star_batch

POLICIES = ["fifo", "star2006", "cta", "carousel"]


@cache
def small_trace() -> Trace:
    return star_batch(scale=0.004)  # 200 single-file requests over 8 cartridges


def run(policy: str, tmp: Path, **changes) -> dict:
    config = ReplayConfig(profile="t9940b", drives=3, policy=policy, **changes)
    return write_outputs(replay(small_trace(), config), tmp)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("policy", POLICIES)
def test_every_file_is_read_once_and_the_outputs_agree(policy, tmp_path):
    summary = run(policy, tmp_path)
    files = read_csv(tmp_path / "files.csv")
    mounts = {m["mount"]: m for m in read_csv(tmp_path / "mounts.csv")}
    assert len(files) == len(small_trace().rows)
    assert {f["state"] for f in files} == {"STAGED"}
    for f in files:
        assert float(f["arrival_s"]) <= float(f["start_s"]) < float(f["end_s"])
        mount = mounts[f["mount"]]
        assert mount["tape"] == f["tape"] and mount["drive"] == f["drive"]
        assert float(mount["requested_s"]) <= float(mount["mounted_s"]) <= float(f["start_s"])
        assert float(f["end_s"]) <= float(mount["unmounted_s"])
    assert sum(int(m["files"]) for m in mounts.values()) == summary["files"] == small_trace().paths
    assert sum(int(m["bytes"]) for m in mounts.values()) == summary["bytes"]
    assert summary["makespan_s"] == max(float(f["end_s"]) for f in files)
    assert summary["mounts"] == len(mounts)
    # nothing beats the physical bound, which the locate-free bound does not exceed
    assert summary["makespan_s"] >= summary["physical_bound_s"] >= summary["physical_bound_locate_free_s"]
    assert 0 < summary["efficiency"] < 1
    latency = summary["latency_s"]
    assert latency["count"] == len(files) and latency["p50"] <= latency["p95"] <= latency["p99"]
    assert set(summary["latency_by_group_s"]) == {"star"}
    assert summary["profile"]["name"] == "t9940b"
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["makespan_s"] == summary["makespan_s"]


@pytest.mark.parametrize("policy", ["star2006", "cta", "carousel"])
def test_skipping_idle_ticks_changes_nothing(policy, tmp_path):
    run(policy, tmp_path / "skip")
    run(policy, tmp_path / "every", skip_idle_ticks=False)
    for name in ("files.csv", "mounts.csv"):
        assert (tmp_path / "skip" / name).read_text() == (tmp_path / "every" / name).read_text()


def test_a_replay_is_reproducible(tmp_path):
    run("carousel", tmp_path / "one")
    run("carousel", tmp_path / "two")
    for name in ("files.csv", "mounts.csv", "summary.json"):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()


def test_reads_that_keep_failing_are_retried_on_later_mounts_then_fail(tmp_path):
    library = LibraryFile(faults={"read_error_probability": 1.0})
    summary = run("carousel", tmp_path, library=library, max_attempts=3, retry_backoff_s=300.0)
    files = read_csv(tmp_path / "files.csv")
    assert {f["state"] for f in files} == {"FAILED"}
    assert summary["failed"] == small_trace().paths
    assert summary["files"] == 0
    assert summary["mounts"] >= 3 * 8  # each cartridge mounted again for each retry


def test_the_command_line_compares_policies(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--workload",
            "star_batch",
            "--scale",
            "0.002",
            "--compare",
            "fifo,carousel",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = read_csv(tmp_path / "compare.csv")
    assert [r["policy"] for r in rows] == ["fifo", "carousel"]
    assert (tmp_path / "trace.csv").exists()
    for policy in ("fifo", "carousel"):
        assert json.loads((tmp_path / policy / "summary.json").read_text())["policy"] == policy
    again = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(tmp_path / "trace.csv"),
            "--profile",
            "t9940b",
            "--drives",
            "9",
            "--policy",
            "carousel",
            "--out",
            str(tmp_path / "again"),
        ],
    )
    assert again.exit_code == 0, again.output
    first = json.loads((tmp_path / "carousel" / "summary.json").read_text())
    second = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert second["makespan_s"] == first["makespan_s"]  # the written trace replays the workload exactly


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--workload", "star_batch", "--trace", "t.csv"], "exactly one of --trace and --workload"),
        (["--trace", "t.csv"], "--trace needs --profile and --drives"),
        (["--workload", "nope"], "unknown workload 'nope'"),
        (["--workload", "star_batch", "--policy", "nope"], "unknown policy 'nope'"),
    ],
)
def test_bad_invocations_fail_in_one_line(tmp_path, arguments, message):
    result = CliRunner().invoke(app, ["simulate", "--scale", "0.002", *arguments, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert message in result.output


def test_a_bad_policy_option_fails_in_one_line_naming_the_policy(tmp_path):
    options = tmp_path / "options.toml"
    options.write_text('[star2006]\ndepth = {default = "deep"}\n')
    arguments = ["--workload", "star_batch", "--policy", "star2006", "--policy-options", str(options)]
    result = CliRunner().invoke(app, ["simulate", "--scale", "0.002", *arguments, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "policy 'star2006': bad options" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_outage_stops_submission_until_the_library_is_back(tmp_path):
    library = LibraryFile(faults={"offline_windows": [{"start_s": 60.0, "end_s": 3000.0}]})
    config = ReplayConfig(profile="t9940b", drives=3, policy="fifo", library=library)
    result = replay(small_trace(), config)
    inside = [files for t, files in result.handovers if 60.0 <= t < 3000.0]
    assert inside and sum(inside) == 0  # cycles ran during the outage and handed nothing over
    assert sum(files for t, files in result.handovers if t >= 3000.0) > 0
    summary = write_outputs(result, tmp_path)
    assert summary["files"] == small_trace().paths  # nothing was lost to the outage
    mounted = [float(m["mounted_s"]) for m in read_csv(tmp_path / "mounts.csv")]
    assert not [t for t in mounted if 60.0 + 60.0 < t < 3000.0]  # no mount starts in the outage


def test_a_read_that_always_hangs_times_out_until_the_file_fails(tmp_path):
    hung = small_trace().rows[0].path
    summary = run(
        "carousel",
        tmp_path,
        library=LibraryFile(faults={"hung_reads": [{"path": hung}]}),  # every read of it hangs
        max_attempts=2,
    )
    files = {f["path"]: f for f in read_csv(tmp_path / "files.csv")}
    assert files[hung]["state"] == "FAILED"
    assert {f["state"] for path, f in files.items() if path != hung} == {"STAGED"}
    assert summary["failed"] == 1 and summary["scheduling"]["read_timeout_margin_s"] == 600.0
