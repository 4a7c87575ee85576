"""Catalogues: seeded generation, the STAR 2006 preset, CSV round trips, refusals naming line and column."""

from __future__ import annotations

import csv
import itertools
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import ConfigError
from hsm_adapters.simulated.catalogue import (
    CSV_HEADER,
    Catalogue,
    CatalogueEntry,
    CatalogueInvalid,
    generate_catalogue,
    load_catalogue_csv,
    star2006_file_types,
    write_catalogue_csv,
)
from hsm_adapters.simulated.profiles import load_profile

LTO9 = load_profile("lto9")
T9940B = load_profile("t9940b")
SEED_TABLE = Path("/work/shared/seeds/003_867e2db8593b7725.txt")
PATH_SHAPE = re.compile(r"/star/(?P<type>[A-Za-z_]+)/(?P<tape>T\d{5})/(?P<n>\d+)\.root")


def csv_bytes(catalogue: Catalogue, folder: Path, name: str = "catalogue.csv") -> bytes:
    path = folder / name
    write_catalogue_csv(catalogue, path)
    return path.read_bytes()


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path: Path):
    first = csv_bytes(generate_catalogue(7, 30, 40, "star2006", LTO9), tmp_path, "a.csv")
    again = csv_bytes(generate_catalogue(7, 30, 40, "star2006", LTO9), tmp_path, "b.csv")
    other = csv_bytes(generate_catalogue(8, 30, 40, "star2006", LTO9), tmp_path, "c.csv")
    assert first == again
    assert first != other
    assert first.startswith(b"path,size_bytes,tape,position_bytes\n")


def test_packed_files_lie_end_to_end_from_the_load_point():
    catalogue = generate_catalogue(1, 12, 25, "lognormal:300000000:1.0", LTO9)
    assert len(catalogue) == 300
    assert catalogue.tapes == tuple(f"T{n:05d}" for n in range(1, 13))
    for tape in catalogue.tapes:
        entries = catalogue.on_tape(tape)
        assert len(entries) == catalogue.file_count(tape) == 25
        assert entries[0].position_bytes == 0
        for before, after in itertools.pairwise(entries):
            assert after.position_bytes == before.end_bytes
        assert catalogue.used_bytes(tape) == entries[-1].end_bytes <= LTO9.capacity_bytes


def test_spread_files_reach_across_the_cartridge_without_overlapping():
    catalogue = generate_catalogue(2, 20, 30, "fixed:1000000000", LTO9, layout="spread")
    for tape in catalogue.tapes:
        entries = catalogue.on_tape(tape)
        assert all(after.position_bytes >= before.end_bytes for before, after in itertools.pairwise(entries))
        assert entries[-1].end_bytes <= LTO9.capacity_bytes
    last_ends = [catalogue.used_bytes(tape) for tape in catalogue.tapes]
    assert min(last_ends) > LTO9.capacity_bytes / 2
    assert {entry.size_bytes for entry in catalogue.values()} == {1_000_000_000}


def test_paths_are_readable_and_name_type_tape_and_sequence():
    catalogue = generate_catalogue(3, 5, 10, "star2006", LTO9)
    types = {file_type.name for file_type in star2006_file_types()}
    for path, entry in catalogue.items():
        shape = PATH_SHAPE.fullmatch(path)
        assert shape, path
        assert shape["type"] in types
        assert shape["tape"] == entry.tape
    for tape in catalogue.tapes:
        numbers = [int(PATH_SHAPE.fullmatch(entry.path)["n"]) for entry in catalogue.on_tape(tape)]
        assert numbers == list(range(1, 11))
    assert all("/data/" in path for path in generate_catalogue(3, 2, 3, "fixed:5", LTO9))


def test_the_star2006_table_is_the_seed_documents_table():
    table = star2006_file_types()
    seed_rows = re.findall(r"^(\d+) \| (\d+) \| (\w+) \|$", SEED_TABLE.read_text(), re.MULTILINE)
    assert len(table) == len(seed_rows) == 18
    assert [(t.average_bytes, t.name) for t in table] == [(int(b), name) for b, _, name in seed_rows]
    assert {t.source for t in table} == {SEED_TABLE.name}


def test_star2006_draws_every_type_around_its_average():
    catalogue = generate_catalogue(4, 400, 50, "star2006", T9940B)
    sizes_by_type: dict[str, list[int]] = {}
    for path, entry in catalogue.items():
        sizes_by_type.setdefault(path.split("/")[2], []).append(entry.size_bytes)
    averages = {t.name: t.average_bytes for t in star2006_file_types()}
    assert set(sizes_by_type) == set(averages)
    for name, sizes in sizes_by_type.items():
        # about 1,100 files per type with a 0.5 log-normal spread: the mean is within a few per cent
        assert np.mean(sizes) == pytest.approx(averages[name], rel=0.06), name
        assert np.std(np.log(sizes)) == pytest.approx(0.5, rel=0.1)
    shares = np.array([len(sizes) for sizes in sizes_by_type.values()]) / len(catalogue)
    assert np.allclose(shares, 1 / 18, atol=0.01)  # equally weighted types


def test_fixed_and_lognormal_presets():
    fixed = generate_catalogue(5, 3, 4, "fixed:123456", LTO9)
    assert {entry.size_bytes for entry in fixed.values()} == {123456}
    drawn = generate_catalogue(5, 50, 100, "lognormal:84000000:0.8", LTO9)
    sizes = [entry.size_bytes for entry in drawn.values()]
    assert np.median(sizes) == pytest.approx(84_000_000, rel=0.05)


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ("star2007", "unknown size model"),
        ("fixed:abc", "not a finite number"),
        ("fixed:0", "positive whole number"),
        ("fixed:1.5", "positive whole number"),
        ("lognormal:84000000", "sigma '' is not a finite number"),
        ("lognormal:nan:1", "not a finite number"),
        ("lognormal:-5:1", "median must be positive"),
    ],
)
def test_a_bad_size_model_is_named(model: str, problem: str):
    with pytest.raises(ConfigError, match=re.escape(problem)):
        generate_catalogue(1, 2, 2, model, LTO9)


def test_files_that_do_not_fit_a_cartridge_are_refused():
    with pytest.raises(ConfigError, match=r"more than the t9940b capacity.*fewer files per cartridge"):
        generate_catalogue(1, 2, 3, "fixed:70000000000", T9940B)
    with pytest.raises(ConfigError, match="layout"):
        generate_catalogue(1, 2, 3, "fixed:7", T9940B, layout="scattered")  # type: ignore[arg-type]


def test_the_mapping_answers_by_path_and_by_tape():
    catalogue = generate_catalogue(6, 4, 3, "fixed:1000", LTO9)
    entry = catalogue["/star/data/T00002/3.root"]
    assert entry == CatalogueEntry("/star/data/T00002/3.root", 1000, "T00002", 2000)
    assert "/star/data/T00002/3.root" in catalogue
    assert "/star/data/T00009/1.root" not in catalogue
    assert list(catalogue)[:2] == ["/star/data/T00001/1.root", "/star/data/T00001/2.root"]
    with pytest.raises(KeyError):
        catalogue["/nowhere"]
    with pytest.raises(KeyError):
        catalogue.on_tape("T00009")
    assert catalogue.total_bytes() == 12_000


def test_the_constructor_sorts_any_order_and_refuses_bad_columns():
    catalogue = Catalogue(["/b", "/a", "/c"], [10, 10, 5], ["X", "X", "A"], [10, 0, 0])
    assert [entry.path for entry in catalogue.on_tape("X")] == ["/a", "/b"]
    assert catalogue.tapes == ("A", "X")
    with pytest.raises(CatalogueInvalid, match="row 1: position_bytes: overlaps the file of row 0"):
        Catalogue(["/a", "/b"], [10, 10], ["X", "X"], [0, 9])
    with pytest.raises(CatalogueInvalid, match="row 2: path: '/a' appears twice"):
        Catalogue(["/a", "/b", "/a"], [1, 1, 1], ["X", "Y", "Z"], [0, 0, 0])
    with pytest.raises(CatalogueInvalid, match="row 0: position_bytes: the file ends at 11"):
        Catalogue(["/a"], [10], ["X"], [1], capacity_bytes=10)
    # a zero-byte file at the place where another starts overlaps nothing
    assert len(Catalogue(["/a", "/b"], [5, 0], ["X", "X"], [0, 0])) == 2


# --- CSV --------------------------------------------------------------------------------------------------


def test_csv_round_trip_keeps_every_entry(tmp_path: Path):
    original = generate_catalogue(9, 15, 20, "star2006", LTO9, layout="spread")
    path = tmp_path / "catalogue.csv"
    write_catalogue_csv(original, path)
    loaded = load_catalogue_csv(path, capacity_bytes=LTO9.capacity_bytes)
    assert dict(loaded.items()) == dict(original.items())
    assert csv_bytes(loaded, tmp_path, "again.csv") == path.read_bytes()


entries_strategy = st.lists(
    st.tuples(
        st.text(alphabet='abc/,"é ', min_size=1, max_size=8),
        st.integers(0, 10**12),
        st.sampled_from(["VOL001", "VOL002", "T,3"]),
        st.integers(0, 10**12),
    ),
    max_size=30,
    unique_by=lambda row: row[0].strip(),
)


@given(entries_strategy)
def test_any_valid_catalogue_survives_a_csv_round_trip(rows: list[tuple[str, int, str, int]]):
    # make the rows valid: names without surrounding blanks, files laid one after another per tape
    next_free: dict[str, int] = {}
    paths, sizes, tapes, positions = [], [], [], []
    for name, size, tape, gap in rows:
        start = next_free.get(tape, 0) + gap
        next_free[tape] = start + size
        paths.append("/" + name.strip())
        sizes.append(size)
        tapes.append(tape)
        positions.append(start)
    catalogue = Catalogue(paths, sizes, tapes, positions)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.csv"
        write_catalogue_csv(catalogue, path)
        assert dict(load_catalogue_csv(path).items()) == dict(catalogue.items())


def write_rows(folder: Path, rows: list[list[str]], header: tuple[str, ...] = CSV_HEADER) -> Path:
    path = folder / "broken.csv"
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


GOOD = [["/a", "100", "T1", "0"], ["/b", "100", "T1", "100"]]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([*GOOD, ["/c", "x1", "T1", "300"]], r"line 4: column size_bytes: 'x1' is not a whole number"),
        ([*GOOD, ["/c", "10", "T1", "-3"]], r"line 4: column position_bytes: negative \(-3\)"),
        ([*GOOD, ["/c", "10", "T1"]], r"line 4: expected 4 columns, found 3"),
        (
            [*GOOD, ["/a", "10", "T2", "0"]],
            r"line 4: column path: '/a' appears twice \(first in line 2\)",
        ),
        (
            [*GOOD, ["/c", "10", "T1", "150"]],
            r"line 4: column position_bytes: overlaps the file of line 3 on the same tape",
        ),
        ([*GOOD, ["", "10", "T2", "0"]], r"line 4: column path: '' is empty"),
        ([*GOOD, ["/c", "10", " T2", "0"]], r"line 4: column tape: ' T2' is empty or has surrounding blanks"),
        ([*GOOD, ["/c", "1e3", "T2", "0"]], r"line 4: column size_bytes: '1e3'"),
    ],
)
def test_a_bad_csv_names_file_line_and_column(tmp_path: Path, rows: list[list[str]], expected: str):
    path = write_rows(tmp_path, rows)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: {expected}"):
        load_catalogue_csv(path)


def test_a_wrong_header_or_an_empty_file_is_refused_on_line_one(tmp_path: Path):
    path = write_rows(tmp_path, GOOD, header=("path", "size", "tape", "position"))
    with pytest.raises(
        ConfigError, match=r"broken\.csv: line 1: header must be path,size_bytes,tape,position_bytes"
    ):
        load_catalogue_csv(path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"empty\.csv: line 1: header"):
        load_catalogue_csv(empty)
    with pytest.raises(ConfigError, match=r"missing\.csv: cannot read"):
        load_catalogue_csv(tmp_path / "missing.csv")


def test_a_file_past_the_tapes_end_is_refused_when_the_capacity_is_known(tmp_path: Path):
    path = write_rows(tmp_path, GOOD)
    assert len(load_catalogue_csv(path)) == 2
    with pytest.raises(
        ConfigError, match="line 3: column position_bytes: the file ends at 200, past the tape's 150"
    ):
        load_catalogue_csv(path, capacity_bytes=150)


def test_a_non_utf8_csv_is_refused_with_its_line(tmp_path: Path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"path,size_bytes,tape,position_bytes\n/\xe9,1,T,0\n")
    with pytest.raises(ConfigError, match=r"latin\.csv: line .*not a readable CSV"):
        load_catalogue_csv(path)
