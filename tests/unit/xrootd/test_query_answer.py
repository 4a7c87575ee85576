"""The answer `xrdfs query prepare` prints: its line format, the asked paths, and the byte budget."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from carousel.xrootd.query_answer import error_answer, normalise, request_answer
from carousel.xrootd.service import FileState, Outlook, RequestState

NAME = "52667f000001:277289e9.6b025b1b:1"
STATES = ("SUBMITTED", "STARTED", "COMPLETED", "FAILED", "CANCELLED")
KEYWORDS = {"REQUEST", "UNKNOWN", "MORE", "ERROR", *STATES}


def _request(files: list[FileState], state: str = "ACTIVE") -> RequestState:
    counts = {s: sum(1 for f in files if f.state == s) for s in STATES}
    return RequestState("0b9f3c2e-5d4a-4f6b-9c1d-2e3f4a5b6c7d", state, len(files), counts)


def _fields(text: str) -> list[list[str]]:
    assert text.endswith("\n")
    return [line.split("\t") for line in text[:-1].split("\n")]


def test_one_line_per_file_after_the_request_line() -> None:
    files = [
        FileState("/star/a.root", "COMPLETED", True, None),
        FileState("/star/b.root", "STARTED", False, None),
        FileState("/star/c.root", "FAILED", False, "not in the library"),
        FileState("/star/d.root", "COMPLETED", False, None),
        FileState("/star/e.root", "CANCELLED", False, None),
        FileState("/star/f.root", "SUBMITTED", False, None),
    ]
    lines = _fields(request_answer(NAME, _request(files), files, budget=2000))
    assert lines[0] == [
        "REQUEST",
        NAME,
        "ACTIVE",
        "id=0b9f3c2e-5d4a-4f6b-9c1d-2e3f4a5b6c7d",
        "files=6",
        "SUBMITTED=1",
        "STARTED=1",
        "COMPLETED=2",
        "FAILED=1",
        "CANCELLED=1",
    ]
    assert lines[1:] == [
        ["COMPLETED", "/star/a.root"],
        ["STARTED", "/star/b.root"],
        ["FAILED", "/star/c.root", "not in the library"],
        ["COMPLETED", "/star/d.root", "not on disk (released)"],
        ["CANCELLED", "/star/e.root"],
        ["SUBMITTED", "/star/f.root"],
    ]


def test_a_failure_without_a_reason_still_says_failed_and_reasons_stay_on_one_line() -> None:
    files = [
        FileState("/a", "FAILED", False, None),
        FileState("/b", "FAILED", False, "drive\terror\nmedium\r\x00gone  "),
    ]
    lines = _fields(request_answer(NAME, _request(files), files, budget=2000))
    assert lines[1:] == [["FAILED", "/a", "failed"], ["FAILED", "/b", "drive error medium gone"]]


def test_asked_paths_in_the_order_asked_and_unknown_ones_named() -> None:
    files = [FileState(f"/star/{i}.root", "SUBMITTED", False, None) for i in range(5)]
    asked = ["/star/3.root", "//star/./1.root/", "/not/there", "/star/3.root"]
    lines = _fields(request_answer(NAME, _request(files), files, asked=asked, budget=2000))
    assert lines[0][0] == "REQUEST" and "files=5" in lines[0]
    assert lines[1:] == [
        ["SUBMITTED", "/star/3.root"],
        ["SUBMITTED", "/star/1.root"],
        ["UNKNOWN", "/not/there", "not in this request"],
    ]


def test_path_normalisation_matches_the_service() -> None:
    assert normalise("//star//a/./b.root/") == "/star/a/b.root"
    assert normalise("/") == "/"


def test_over_the_budget_the_most_telling_files_come_first_and_the_rest_is_counted() -> None:
    files = [FileState(f"/star/data/file_{i:04d}.root", "COMPLETED", True, None) for i in range(200)]
    files[150] = FileState("/star/data/file_0150.root", "FAILED", False, "tape T00042 is damaged")
    files[170] = FileState("/star/data/file_0170.root", "STARTED", False, None)
    text = request_answer(NAME, _request(files), files, budget=1000)
    assert len(text.encode()) <= 1000
    lines = _fields(text)
    assert lines[0][0] == "REQUEST" and "files=200" in lines[0]
    assert lines[1] == ["FAILED", "/star/data/file_0150.root", "tape T00042 is damaged"]
    assert lines[2] == ["STARTED", "/star/data/file_0170.root"]
    assert {line[0] for line in lines[3:-1]} == {"COMPLETED"}
    shown = len(lines) - 2
    assert lines[-1][0] == "MORE"
    assert lines[-1][1].startswith(
        f"{200 - shown} more file(s) not shown: the answer is limited to 1000 bytes"
    )


def test_an_error_is_one_line() -> None:
    assert error_answer("carousel at http://x:1\nis unreachable") == (
        "ERROR\tcarousel at http://x:1 is unreachable\n"
    )


_PATHS = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\t\n"), min_size=0, max_size=60
).map(lambda s: "/" + s)
_FILES = st.lists(
    st.builds(
        FileState,
        _PATHS,
        st.sampled_from(STATES),
        st.booleans(),
        st.none() | st.text(max_size=80),
    ),
    max_size=120,
)


@given(files=_FILES, budget=st.integers(min_value=256, max_value=4000))
def test_every_answer_fits_its_budget_and_every_line_says_what_it_is(
    files: list[FileState], budget: int
) -> None:
    text = request_answer(NAME, _request(files), files, budget=budget)
    assert len(text.encode("utf-8", "surrogateescape")) <= budget
    lines = _fields(text)
    assert {line[0] for line in lines} <= KEYWORDS
    assert lines[0][0] == "REQUEST"
    file_lines = [line for line in lines[1:] if line[0] != "MORE"]
    more = [line for line in lines if line[0] == "MORE"]
    if more:
        assert int(more[0][1].split()[0]) + len(file_lines) == len(files)
    else:
        assert len(file_lines) == len(files)
    for line in lines:
        assert all(ch >= " " or ch == "\t" for ch in "\t".join(line))


def test_an_active_request_says_where_it_stands_after_its_request_line() -> None:
    files = [FileState("/star/a.root", "SUBMITTED", False, None)]
    outlook = Outlook(
        position=15,
        eta="2026-03-01T00:02:35+00:00",
        rough=True,
        waiting=(("not_worth_mounting_yet", 3), ("tape_unknown", 1)),
    )
    request = replace(_request(files), outlook=outlook)

    lines = _fields(request_answer(NAME, request, files, budget=2000))

    assert lines[0][0] == "REQUEST"
    assert lines[1] == [
        "OUTLOOK",
        "position=15",
        "eta=2026-03-01T00:02:35+00:00",
        "rough=yes",
        "waiting=not_worth_mounting_yet:3,tape_unknown:1",
    ]
    assert lines[2:] == [["SUBMITTED", "/star/a.root"]]
    unplaced = replace(request, outlook=Outlook(position=None, eta=None, rough=False, waiting=()))
    assert _fields(request_answer(NAME, unplaced, files, budget=2000))[1][1:] == [
        "position=-",
        "eta=-",
        "rough=no",
        "waiting=-",
    ]


def test_a_code_given_by_several_libraries_is_one_entry() -> None:
    files = [FileState("/star/a.root", "SUBMITTED", False, None)]
    waiting = (("not_worth_mounting_yet", 3), ("tape_unknown", 2), ("not_worth_mounting_yet", 1))
    outlook = Outlook(position=0, eta=None, rough=False, waiting=waiting)  # a site: one entry per library
    request = replace(_request(files), outlook=outlook)

    line = _fields(request_answer(NAME, request, files, budget=2000))[1]

    assert line[-1] == "waiting=not_worth_mounting_yet:4,tape_unknown:2"


def test_the_outlook_line_counts_against_the_budget() -> None:
    files = [FileState(f"/star/{n:04d}.root", "SUBMITTED", False, None) for n in range(200)]
    waiting = tuple((code, 50) for code in ("not_worth_mounting_yet", "group_over_share", "retry_pending"))
    request = replace(_request(files), outlook=Outlook(3, "2026-03-01T00:02:35+00:00", False, waiting))

    text = request_answer(NAME, request, files, budget=600)

    assert len(text.encode()) <= 600
    lines = _fields(text)
    assert [line[0] for line in lines[:2]] == ["REQUEST", "OUTLOOK"] and lines[-1][0] == "MORE"
