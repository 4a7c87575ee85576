from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError
from carousel.replay.trace import TRACE_HEADER, TraceRow, load_trace, make_trace, write_trace


def write(tmp_path: Path, *lines: str, header: str = ",".join(TRACE_HEADER)) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


def test_rows_load_sorted_by_arrival_with_defaults_for_empty_group_and_priority(tmp_path):
    trace = load_trace(
        write(tmp_path, "5.5,r2,/b,10,T2,0,cms,3", "1,r1,/a,20,T1,100,,", "1,r1,/c,30,T1,200,,")
    )
    assert [r.path for r in trace.rows] == ["/a", "/c", "/b"]  # ties keep the file's order
    assert trace.rows[0] == TraceRow(1.0, "r1", "/a", 20, "T1", 100, "default", 0)
    assert trace.rows[2].group == "cms" and trace.rows[2].priority == 3
    assert trace.paths == 3


def test_write_then_load_gives_the_same_rows(tmp_path):
    rows = [TraceRow(0.25, "r1", "/a", 1, "T", 0, "g", 1), TraceRow(3.0, "r2", "/a", 1, "T", 0)]
    write_trace(rows, tmp_path / "x.csv")
    assert load_trace(tmp_path / "x.csv").rows == tuple(rows)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("x,r,/a,1,T,0,,", "line 2: column arrival_s: 'x' is not a number"),
        ("-1,r,/a,1,T,0,,", "line 2: column arrival_s: '-1' must be a finite number >= 0"),
        ("1,r,/a,1.5,T,0,,", "line 2: column size_bytes: '1.5' is not a whole number"),
        ("1,r,/a,1,T,-4,,", "line 2: column position_bytes: -4 is negative"),
        ("1,r,/a,1,,0,,", "line 2: column tape: empty"),
        ("1,r,/a,1,T,0,,x", "line 2: column priority: 'x' is not a whole number"),
        ("1,r,/a,1,T,0", "line 2: 6 columns, expected 8"),
    ],
)
def test_bad_rows_are_refused_naming_file_line_and_column(tmp_path, line, message):
    path = write(tmp_path, line)
    with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
        load_trace(path)


def test_a_wrong_header_or_no_rows_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="line 1: the header must be exactly arrival_s,request"):
        load_trace(write(tmp_path, "1,r,/a,1,T,0,,", header="arrival,request"))
    with pytest.raises(ConfigError, match="no rows"):
        load_trace(write(tmp_path))
    with pytest.raises(ConfigError, match="cannot read"):
        load_trace(tmp_path / "missing.csv")


def test_a_path_in_two_places_is_refused_naming_both_lines(tmp_path):
    path = write(tmp_path, "1,r1,/a,10,T1,0,,", "2,r2,/a,10,T2,0,,")
    with pytest.raises(ConfigError, match=r"line 3: column path: /a is on T2 .* elsewhere in line 2"):
        load_trace(path)
    assert (
        len(make_trace([TraceRow(1, "r1", "/a", 10, "T1", 0), TraceRow(2, "r2", "/a", 10, "T1", 0)]).rows)
        == 2
    )
