"""The policy study: replays of STAR-like and modern workloads under every policy, checked against seed 003.

The study runs once for the module with the default workloads and a shorter sweep (fewer depths and drive
counts than `carousel study` draws), so that the numbers asserted are those of the report.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from matplotlib.image import imread

from studies.policies.analysis import PolicyAnalysis, analyse_policies, replay_count
from studies.policies.published import (
    DEPTH_SOURCE,
    DEPTH_THROUGHPUT_LIMIT_PERCENT,
    GROUPING_GAIN_PERCENT,
    GROUPING_SOURCE,
)
from studies.policies.runs import (
    POLICIES,
    STAR_BATCH,
    STAR_DEPTH,
    STAR_STREAM,
    PolicySettings,
    mix_name,
)
from studies.policies.study import NAME, run_with
from studies.policies.tables import GROUPING_COLUMNS, RUN_COLUMNS
from studies.registry import study_names
from studies.report import StudyRun, render_report
from studies.result import COMPARISON_COLUMNS, StudyResult, write_comparisons_csv
from studies.sources import cite
from tests.studies.prose import naming_files
from tests.studies.seeds import seed_text

# One worker runs the module, so the study below runs once (xdist would otherwise run the module fixture on
# each worker that gets one of its tests).
pytestmark = pytest.mark.xdist_group("policy-study")
SETTINGS = PolicySettings(depths=(5, 10, 30, 100), drive_counts=(2, 9))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, StudyResult, list[str]]:
    out_dir = tmp_path_factory.mktemp("policies")
    steps: list[str] = []
    result = run_with(SETTINGS, out_dir, lambda step, done, total: steps.append(f"{done}/{total} {step}"))
    return out_dir, result, steps


@pytest.fixture(scope="module")
def tables(study: tuple[Path, StudyResult, list[str]]) -> dict[str, list[dict[str, str]]]:
    _, result, _ = study
    loaded = {}
    for path in result.tables:
        with path.open(encoding="utf-8", newline="") as handle:
            loaded[path.name] = list(csv.DictReader(handle))
    return loaded


def _rows(table: list[dict[str, str]], workload: str) -> dict[str, dict[str, str]]:
    return {row["policy"]: row for row in table if row["workload"] == workload}


def test_the_study_is_registered() -> None:
    assert NAME in study_names()


def test_settings_refuse_a_depth_sweep_without_stars_depth() -> None:
    with pytest.raises(ValueError, match="30"):
        PolicySettings(depths=(10, 20, 50))


def test_progress_counts_every_replay_and_figure(study: tuple[Path, StudyResult, list[str]]) -> None:
    _, _, steps = study
    total = replay_count(SETTINGS) + 1 + 4
    assert steps[-1] == f"{total}/{total} done"
    assert sum(1 for step in steps if " replay" in step) == replay_count(SETTINGS)


def test_policies_rank_on_star_like_work(tables: dict[str, list[dict[str, str]]]) -> None:
    for workload in (STAR_BATCH, STAR_STREAM):
        rows = _rows(tables["policies_side_by_side.csv"], workload)
        assert set(rows) == set(POLICIES)
        throughput = {policy: float(row["throughput_mb_s"]) for policy, row in rows.items()}
        assert throughput["carousel"] >= throughput["star2006"] >= throughput["fifo"], workload
        bound = float(rows["carousel"]["bound_throughput_mb_s"])
        assert throughput["carousel"] <= bound * 1.0001  # no schedule beats the physical bound
        assert float(rows["carousel"]["makespan_over_bound"]) < 1.15, workload


def test_grouping_by_tape_reads_more_files_per_mount(tables: dict[str, list[dict[str, str]]]) -> None:
    rows = {row["workload"]: row for row in tables["grouping_gain.csv"]}
    mixes = [mix_name(share) for share in SETTINGS.mix_bulk_shares]
    assert list(rows) == [STAR_STREAM, *mixes, STAR_BATCH]
    for workload, row in rows.items():
        assert float(row["files_per_mount_grouped"]) > float(row["files_per_mount_without"]), workload
        assert float(row["gain_percent"]) > 0, workload
    # bulk work gains far more than random traffic: STAR's 20 % from a mix lies between the two
    stream, half_bulk, batch = (float(rows[w]["gain_percent"]) for w in (STAR_STREAM, mixes[-1], STAR_BATCH))
    assert stream < GROUPING_GAIN_PERCENT < batch
    assert half_bulk > stream


def test_stars_grouping_gain_is_read_off_the_mixes(study: tuple[Path, StudyResult, list[str]]) -> None:
    out_dir, _, _ = study
    with (out_dir / "grouping_gain.csv").open(encoding="utf-8", newline="") as handle:
        points = [
            (float(r["bulk_share_percent"]), float(r["gain_percent"]))
            for r in csv.DictReader(handle)
            if r["workload"] != STAR_BATCH
        ]
    crossing = next(
        low_share + (GROUPING_GAIN_PERCENT - low) / (high - low) * (high_share - low_share)
        for (low_share, low), (high_share, high) in pairwise(points)
        if low < GROUPING_GAIN_PERCENT <= high
    )
    finding = next(f for f in study[1].findings if f.startswith("Grouping by tape"))
    assert f"reached with about {crossing:.0f} % of the files in bulk restores" in finding
    assert 0 < crossing < 100 * max(SETTINGS.mix_bulk_shares)


def test_depth_moves_throughput_by_at_most_ten_percent_on_random_traffic(
    tables: dict[str, list[dict[str, str]]],
) -> None:
    """Seed 003: the daemon's depth changed performance within 10 % (tolerance 0: the figure is a bound)."""
    sweep = [r for r in tables["depth_sweep.csv"] if r["workload"] == STAR_STREAM]
    by_depth = {int(r["depth"]): float(r["throughput_mb_s"]) for r in sweep}
    assert set(by_depth) == set(SETTINGS.depths)
    base = by_depth[STAR_DEPTH]
    for depth, throughput in by_depth.items():
        if depth >= SETTINGS.depth_claim_from:
            assert abs(throughput / base - 1) * 100 <= DEPTH_THROUGHPUT_LIMIT_PERCENT, depth


def test_depth_decides_the_drives_at_work_on_a_grouped_batch(
    tables: dict[str, list[dict[str, str]]],
) -> None:
    sweep = {int(r["depth"]): r for r in tables["depth_sweep.csv"] if r["workload"] == STAR_BATCH}
    throughput = [float(sweep[d]["throughput_mb_s"]) for d in sorted(sweep)]
    latency = [float(sweep[d]["latency_p50_s"]) for d in sorted(sweep)]
    assert throughput == sorted(throughput)  # deeper: more drives at work
    assert latency == sorted(latency, reverse=True)
    assert throughput[-1] / throughput[0] > 1 + DEPTH_THROUGHPUT_LIMIT_PERCENT / 100


def test_more_drives_never_slow_a_policy_down(tables: dict[str, list[dict[str, str]]]) -> None:
    for policy in POLICIES:
        rows = sorted(
            (r for r in tables["drive_sweep.csv"] if r["policy"] == policy), key=lambda r: int(r["drives"])
        )
        assert [int(r["drives"]) for r in rows] == list(SETTINGS.drive_counts)
        assert float(rows[-1]["throughput_mb_s"]) >= float(rows[0]["throughput_mb_s"]), policy


def test_published_vs_reproduced_rows(study: tuple[Path, StudyResult, list[str]]) -> None:
    _, result, _ = study
    rows = {row.quantity: row for row in result.comparisons}
    stream_depth = next(r for q, r in rows.items() if "depth" in q and STAR_STREAM in q)
    assert stream_depth.source == DEPTH_SOURCE
    assert (stream_depth.published_low, stream_depth.published_high) == (0.0, DEPTH_THROUGHPUT_LIMIT_PERCENT)
    assert stream_depth.tolerance == 0.0
    assert stream_depth.agrees
    grouping = [r for q, r in rows.items() if "grouping" in q]
    assert len(grouping) == 2
    for row in grouping:
        assert row.source == GROUPING_SOURCE
        assert row.published_low == GROUPING_GAIN_PERCENT
        assert row.agrees or row.note  # a disagreement is explained, not hidden by the tolerance
    for row in result.comparisons:
        assert row.source.startswith("003_867e2db8593b7725.txt")
        if not row.agrees:
            assert row.note


def test_the_published_figures_are_in_the_seed() -> None:
    text = seed_text("003_867e2db8593b7725.txt")
    assert "within 10%" in text
    assert "20% improvement" in text
    assert "1.2 files per cartriges" in text
    assert "K=50, N=15" in text and "30 deep for the DST COS and 20 deep for the Raw COS" in text


def test_tables_have_their_columns(study: tuple[Path, StudyResult, list[str]]) -> None:
    out_dir, result, _ = study
    headers = {}
    for path in result.tables:
        assert path.parent == out_dir
        with path.open(encoding="utf-8", newline="") as handle:
            headers[path.name] = tuple(next(csv.reader(handle)))
    for name in ("policies_side_by_side.csv", "depth_sweep.csv", "drive_sweep.csv"):
        assert headers[name] == RUN_COLUMNS
    assert headers["grouping_gain.csv"] == GROUPING_COLUMNS
    assert headers["published_vs_reproduced.csv"] == COMPARISON_COLUMNS
    assert headers["workloads.csv"][0] == "workload"


def test_figures_are_readable_pictures(study: tuple[Path, StudyResult, list[str]]) -> None:
    _, result, _ = study
    assert len(result.figures) == 4
    for figure in result.figures:
        assert figure.path.read_bytes()[:8] == PNG_SIGNATURE
        height, width = imread(figure.path).shape[:2]
        assert width >= 800 and height >= 400, figure.path.name
        assert figure.caption


def test_the_report_has_a_section_for_the_study(study: tuple[Path, StudyResult, list[str]]) -> None:
    out_dir, result, _ = study
    combined = write_comparisons_csv(result.comparisons, out_dir / "combined.csv")
    page = render_report([StudyRun(result, 1.0)], out_dir.parent, combined, "2026-01-01 00:00 UTC")
    assert f'<section id="{NAME}">' in page
    for figure in result.figures:
        assert f'{out_dir.name}/{figure.path.name}"' in page
    assert page.count(cite(GROUPING_SOURCE)) == 2  # the two rows of the table, the source named by title
    assert page.count(GROUPING_SOURCE.partition(" ")[0]) == 1  # the file name once, in the sources
    assert len(result.headlines) == 2 and all(
        "the carousel policy reads" in line for line in result.headlines
    )
    assert naming_files(result) == []


def test_replays_in_processes_give_the_rows_of_one_process() -> None:
    tiny = PolicySettings(
        batch_scale=0.005,
        stream_scale=0.005,
        lto_scale=0.01,
        depths=(10, 30),
        drive_counts=(9,),
        mix_bulk_shares=(0.5,),
        workers=1,
    )
    alone: PolicyAnalysis = analyse_policies(tiny)
    pooled = analyse_policies(replace(tiny, workers=2))
    assert pooled.rows == alone.rows
    assert len(alone.rows) == replay_count(tiny)
