"""The shared study skeleton: comparison rows, their CSV, the registry and the typed CSV reader."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError, InvalidInput
from studies.csv_records import read_records
from studies.registry import get_study, study_names
from studies.result import COMPARISON_COLUMNS, Comparison, write_comparisons_csv, write_csv
from studies.worker_disks.data import DATA_DIR, HAMMERCLOUD_CSV, load_worker_disk_data


def comparison(reproduced: float, low: float = 2.0, high: float = 3.0, tolerance: float = 0.0) -> Comparison:
    return Comparison("workers", "doc slide", low, high, reproduced, "workers", tolerance, "held out")


def test_inside_a_published_range_there_is_no_difference() -> None:
    assert comparison(2.5).difference == 0.0
    assert comparison(2.5).agrees


def test_outside_a_range_the_difference_is_to_the_nearest_end() -> None:
    assert comparison(5.0).difference == pytest.approx(2.0)
    assert comparison(1.5).difference == pytest.approx(-0.5)
    assert not comparison(5.0).agrees
    assert comparison(3.5, tolerance=0.5).agrees


def test_published_text_shows_points_and_ranges() -> None:
    assert comparison(1.0).published == "2-3"
    assert comparison(1.0, low=0.75, high=0.75).published == "0.75"


def test_comparison_rejects_inverted_ranges_and_negative_tolerances() -> None:
    with pytest.raises(ValueError, match="range"):
        comparison(1.0, low=3.0, high=2.0)
    with pytest.raises(ValueError, match="tolerance"):
        comparison(1.0, tolerance=-1.0)


def test_comparisons_csv_round_trips(tmp_path: Path) -> None:
    rows = [comparison(2.5), comparison(5.0, tolerance=1.0)]
    path = write_comparisons_csv(rows, tmp_path / "sub" / "published_vs_reproduced.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        written = list(csv.DictReader(handle))
    assert tuple(written[0]) == COMPARISON_COLUMNS
    assert [row["published"] for row in written] == ["2-3", "2-3"]
    assert [float(row["difference"]) for row in written] == [0.0, 2.0]
    assert [row["agrees"] for row in written] == ["yes", "no"]


def test_write_csv_refuses_ragged_rows(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        write_csv(tmp_path / "t.csv", ("a", "b", "c"), [(1, 2)])


def test_registry_knows_the_worker_disk_study() -> None:
    assert "worker-disks" in study_names()
    assert callable(get_study("worker-disks"))


def test_registry_names_the_unknown_study() -> None:
    with pytest.raises(InvalidInput, match="unknown study 'tape'") as raised:
        get_study("tape")
    assert raised.value.field == "study"


def test_reader_names_file_line_and_column_of_a_bad_number(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,x\n", encoding="utf-8")
    records = read_records(path, ("a", "b"))
    assert records[0].number("b") == 2.0
    with pytest.raises(ConfigError, match=r"t\.csv, line 3, column 'b': 'x' is not a number"):
        records[1].number("b")


def test_reader_names_missing_columns_and_ragged_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2,3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="missing column"):
        read_records(path, ("a", "c"))
    with pytest.raises(ConfigError, match="line 2: wrong number of cells"):
        read_records(path, ("a", "b"))


def test_reader_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        read_records(tmp_path / "absent.csv", ("a",))


def test_loader_points_at_a_broken_transcription(tmp_path: Path) -> None:
    broken = tmp_path / "data"
    shutil.copytree(DATA_DIR, broken)
    path = broken / HAMMERCLOUD_CSV
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace(",0.80,", ",1.80,")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"worker_disks_hammercloud\.csv, line 4, column 'efficiency'"):
        load_worker_disk_data(broken)
