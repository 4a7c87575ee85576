"""The CSV files in studies/data match the seed documents row by row.

The tables are parsed out of the seed files here, independently of the study's own loader, and every CSV row
is compared with the row of the document it names.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from studies.worker_disks.data import (
    BNL_CSV,
    DATA_DIR,
    HAMMERCLOUD_CSV,
    LONGTERM_CSV,
    PRICE_CSV,
    load_worker_disk_data,
)
from tests.studies.seeds import SEEDS_DIR, seed_text

GLASGOW_PAPER = "000_5f99fa0da61b6dda.txt"
GRIDPP_WIKI = "001_f186e70e6529aa00.txt"
BNL_SLIDES = "002_17936f0b5c29b893.txt"

# Every slide title of seed 002, so that a statement is looked up on its own slide only.
BNL_SLIDE_TITLES = (
    "Motivation",
    "PROOF Farm Configuration",
    "Solid State Disks Used for Tests",
    "Additional Test Details",
    "SSD Tests",
    "Typical test session in root",
    "Interactive analysis. SSD vs HDD",
    "SSD vs HDD",
    "SSD: single disk vs RAID",
    "HDD single disk vs RAID",
    "SSD vs HDD. 8 node farm",
    "Second use case details",
    "H->4l analysis. SSD vs HDD",
    "H->4l analysis. SSD RAID 0",
    "H->4I analysis. HDD: single vs RAID",
    "Summary and Discussion",
    "The End",
)


def csv_rows(name: str) -> list[dict[str, str]]:
    with (DATA_DIR / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def paper_sentences() -> list[str]:
    sentences = json.loads(seed_text(GLASGOW_PAPER))["article_text"]
    assert isinstance(sentences, list)
    return [str(sentence) for sentence in sentences]


def paper_table(marker: str, occurrence: int = 0) -> str:
    """The flattened table that starts at the `occurrence`-th `marker` of seed 000."""
    text = " ".join(paper_sentences())
    starts = [match.start() for match in re.finditer(re.escape(marker), text)]
    assert len(starts) > occurrence, f"seed 000 has no table #{occurrence} starting with {marker!r}"
    start = starts[occurrence]
    # A table runs until the next flattened table begins (a sentence opening with ll or llll).
    following = re.search(r"(?<=\s)ll+ ", text[start + len(marker) :])
    return text[start : start + len(marker) + following.start()] if following else text[start:]


def paper_hammercloud_rows(occurrence: int) -> list[tuple[str, int, int, str, str]]:
    table = paper_table("llll cores : jobs", occurrence)
    return [
        (label.strip(), int(cores), int(jobs), percent, throughput)
        for cores, jobs, label, percent, throughput in re.findall(
            r"(\d+):(\d+)&([^&+]+?)&(\d+)%&([\d.]+)", table
        )
    ]


def test_every_csv_row_names_a_seed_document() -> None:
    for name in (HAMMERCLOUD_CSV, LONGTERM_CSV, PRICE_CSV, BNL_CSV):
        for row in csv_rows(name):
            assert (SEEDS_DIR / row["document"]).is_file(), f"{name}: {row['document']} is not a seed file"
            assert row["table" if "table" in row else "slide"], f"{name}: a row names no table or slide"


@pytest.mark.parametrize(("table", "occurrence"), [("primaryresults", 0), ("rfioresults", 1)])
def test_paper_hammercloud_tables_match_row_by_row(table: str, occurrence: int) -> None:
    published = paper_hammercloud_rows(occurrence)
    transcribed = [
        row for row in csv_rows(HAMMERCLOUD_CSV) if row["document"] == GLASGOW_PAPER and row["table"] == table
    ]
    assert len(transcribed) == len(published) > 0
    for row, (label, cores, jobs, percent, throughput) in zip(transcribed, published, strict=True):
        assert row["storage_label"] == label
        assert (int(row["cores"]), int(row["jobs"])) == (cores, jobs)
        assert float(row["efficiency"]) == pytest.approx(int(percent) / 100.0, abs=1e-12)
        assert row["throughput"] == throughput


def test_paper_access_methods_follow_the_tables() -> None:
    for row in csv_rows(HAMMERCLOUD_CSV):
        if row["document"] == GLASGOW_PAPER:
            expected = {"primaryresults": "filestager", "rfioresults": "direct"}[row["table"]]
            assert row["access"] == expected


def test_paper_longterm_table_matches() -> None:
    table = paper_table("ll storage type&mean job efficiency")
    published = re.findall(r"\+ ([^&+]+?)&(\d+)%", table)
    transcribed = csv_rows(LONGTERM_CSV)
    assert len(transcribed) == len(published) == 2
    for row, (label, percent) in zip(transcribed, published, strict=True):
        assert row["document"] == GLASGOW_PAPER
        assert row["storage_label"] == label.strip()
        assert float(row["efficiency"]) == int(percent) / 100.0


def test_paper_price_performance_table_matches() -> None:
    table = paper_table("llll storage type&unit price")
    published = re.findall(r"\+ ([^&+]+?)&(\d+)&([\d.]+)&([\d.]+)", table)
    transcribed = csv_rows(PRICE_CSV)
    assert len(transcribed) == len(published) == 3
    for row, (label, price, per_throughput, per_gb) in zip(transcribed, published, strict=True):
        assert row["storage_label"] == label.strip()
        assert row["unit_price_gbp"] == price
        assert row["price_per_throughput_gbp"] == per_throughput
        assert row["price_per_gb_gbp"] == per_gb


def test_price_table_capacities_are_stated_in_the_paper() -> None:
    text = " ".join(paper_sentences())
    for row in csv_rows(PRICE_CSV):
        capacity = row["capacity_gb"]
        assert re.search(rf"(?<![\d.]){capacity} ?gb", text), f"{capacity} GB is not stated in seed 000"


def wiki_tables() -> dict[str, list[tuple[str, str, int, str, str]]]:
    """The HammerCloud tables of seed 001: heading -> rows (nodes, label, jobs, efficiency, throughput)."""
    tables: dict[str, list[tuple[str, str, int, str, str]]] = {}
    row_pattern = re.compile(
        r"^(node\d+(?:\s*-\s*\d+)?) (.+?) (\d+)(?: ([\d.]+)(?: \(x2 correction\*\))? ([\d.]+))?\s*$"
    )
    filestager = 0
    current = None
    for line in seed_text(GRIDPP_WIKI).splitlines():
        if line.startswith("FileStager ("):
            filestager += 1
            current = f"FileStager table {filestager}"
        elif line.startswith("Direct rfio access"):
            current = "Direct rfio access table"
        elif current and (match := row_pattern.match(line)):
            nodes, label, jobs, efficiency, throughput = match.groups()
            tables.setdefault(current, []).append(
                (nodes, label, int(jobs), efficiency or "", throughput or "")
            )
    return tables


def test_wiki_tables_match_row_by_row() -> None:
    published = wiki_tables()
    assert len(published) == 4
    transcribed = [row for row in csv_rows(HAMMERCLOUD_CSV) if row["document"] == GRIDPP_WIKI]
    assert len(transcribed) == sum(len(rows) for rows in published.values())
    for table, rows in published.items():
        ours = [row for row in transcribed if row["table"] == table]
        assert len(ours) == len(rows), table
        for row, (nodes, label, jobs, efficiency, throughput) in zip(ours, rows, strict=True):
            assert (row["nodes"], row["storage_label"], int(row["jobs"])) == (nodes, label, jobs)
            assert row["efficiency"] == efficiency
            assert row["throughput"] == throughput
            assert row["access"] == ("direct" if table.startswith("Direct") else "filestager")


def test_wiki_throughput_is_jobs_times_efficiency() -> None:
    for row in load_worker_disk_data().hammercloud:
        if row.document == GRIDPP_WIKI and row.efficiency is not None and row.throughput is not None:
            assert row.throughput == pytest.approx(row.jobs * row.efficiency, rel=1e-9)


def bnl_slides() -> dict[str, str]:
    """Slide title -> the slide's text, for the first slide of each title in seed 002."""
    lines = seed_text(BNL_SLIDES).splitlines()
    starts = [(index, line.strip()) for index, line in enumerate(lines) if line.strip() in BNL_SLIDE_TITLES]
    slides: dict[str, str] = {}
    for (start, title), (end, _) in zip(starts, [*starts[1:], (len(lines), "")], strict=True):
        slides.setdefault(title, "\n".join(lines[start:end]))
    return slides


def test_bnl_statements_are_on_the_slides_they_name() -> None:
    slides = bnl_slides()
    rows = csv_rows(BNL_CSV)
    assert rows
    for row in rows:
        assert row["document"] == BNL_SLIDES
        assert row["slide"] in slides, f"no slide {row['slide']!r} in seed 002"
        text = re.sub(r"(?<=\d),(?=\d{3})", "", slides[row["slide"]])
        for column in ("low", "high"):
            number = row[column]
            assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text), (
                f"{BNL_CSV}: {row['quantity']} {column}={number} is not on slide {row['slide']!r}"
            )


def test_loader_reads_every_row() -> None:
    data = load_worker_disk_data()
    assert len(data.hammercloud) == len(csv_rows(HAMMERCLOUD_CSV))
    assert len(data.longterm) == len(csv_rows(LONGTERM_CSV))
    assert len(data.prices) == len(csv_rows(PRICE_CSV))
    assert len(data.bnl) == len(csv_rows(BNL_CSV))


def test_data_dir_is_inside_the_package() -> None:
    package_data = Path(__file__).resolve().parents[2] / "studies" / "data"
    assert package_data == DATA_DIR
