"""How the program reads the call XRootD's Generic Prepare Interface makes."""

from __future__ import annotations

import re

import pytest

from carousel.xrootd.arguments import Operation, UsageError, escaped, parse_call, strip_cgi

REQID = "52667f000001:277289e9.6b025b1b:1"


def test_stage_with_every_option() -> None:
    env = {"XRDPREP_TID": "root.123:22@[::ffff:127.0.0.1]", "XRDPREP_COLOC": "/star/a.root"}
    call = parse_call(["-C", "-p", "3", "-w", "--", REQID, "stage", "/star/a.root", "/star/b.root"], env)
    assert call.operation is Operation.STAGE
    assert call.request_id == REQID and call.has_request_id
    assert call.paths == ("/star/a.root", "/star/b.root")
    assert call.priority == 3
    assert call.colocation == "/star/a.root"
    assert call.for_writing is True
    assert call.client == "root.123:22@[::ffff:127.0.0.1]"


def test_what_xrootd_553_sends_for_each_operation() -> None:
    """The argument lists recorded from xrootd 5.5.3 running a program that logged them."""
    assert parse_call(["-p", "0", "--", REQID, "stage", "/a"], {}).priority == 0
    prep = parse_call(["-p", "0", "--", "*", "prep", "/a"], {})
    assert (prep.operation, prep.has_request_id) == (Operation.PREP, False)
    evict = parse_call(["--", "*", "evict", "/a"], {})
    assert (evict.operation, evict.paths, evict.has_request_id) == (Operation.EVICT, ("/a",), False)
    cancel = parse_call(["--", "myreq", "cancel"], {})
    assert (cancel.operation, cancel.request_id, cancel.paths) == (Operation.CANCEL, "myreq", ())
    assert parse_call(["--", "myreq", "cancel", "/a"], {}).paths == ("/a",)
    query = parse_call(["--", "myreq", "query"], {})
    assert (query.operation, query.paths, query.client) == (Operation.QUERY, (), "anon")


def test_colocation_only_with_the_flag() -> None:
    env = {"XRDPREP_COLOC": "/star/a.root"}
    assert parse_call(["-p", "0", "--", REQID, "stage", "/star/a.root"], env).colocation is None
    assert parse_call(["-C", "-p", "0", "--", REQID, "stage", "/star/a.root"], {}).colocation is None


def test_options_of_later_xrootd_releases_are_accepted() -> None:
    call = parse_call(["-a", "-C", "-n", "fin", "-p", "2", "-w", "--", REQID, "stage", "/a"], {})
    assert (call.priority, call.paths) == (2, ("/a",))


def test_everything_after_the_separator_is_positional() -> None:
    call = parse_call(["--", "-p", "query", "-w"], {})
    assert (call.request_id, call.paths) == ("-p", ("-w",))


def test_query_strings_are_cut_from_paths() -> None:
    """With -cgi, XRootD appends each path's query string (5.5.3 copies the first one onto every path)."""
    env = {"XRDPREP_COLOC": "/a?x=1"}
    call = parse_call(["-C", "-p", "0", "--", REQID, "stage", "/a?x=1", "/b?x=1"], env)
    assert call.paths == ("/a", "/b")
    assert call.colocation == "/a"
    assert strip_cgi("/plain") == "/plain"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([REQID, "stage", "/a"], "expected '-- <reqid> <operation>"),
        (["--", REQID, "bogus", "/a"], "invalid choice: 'bogus'"),
        (["-p", "high", "--", REQID, "stage", "/a"], "argument -p: invalid int value"),
        (["-Z", "--", REQID, "stage", "/a"], "unrecognized arguments: -Z"),
        (["-n", "later", "--", REQID, "stage", "/a"], "argument -n: invalid choice"),
        (["--", REQID, "stage"], "stage needs at least one path"),
        (["--", "*", "evict"], "evict needs at least one path"),
        (["--", " ", "query"], "the request id is empty"),
        (["--"], "required"),
    ],
)
def test_calls_xrootd_never_makes_are_refused_by_name(argv: list[str], says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_call(argv, {})


@pytest.mark.parametrize("request_id", ["a" * 257, "a\tb", "a\nb", "a b", "é"])
def test_a_request_id_that_cannot_name_a_request_is_refused(request_id: str) -> None:
    with pytest.raises(UsageError, match="cannot name a carousel request"):
        parse_call(["--", request_id, "stage", "/a"], {})
    assert parse_call(["--", "a" * 256, "stage", "/a"], {}).request_id == "a" * 256


def test_paths_and_hints_that_are_not_utf8_are_refused() -> None:
    not_utf8 = b"/star/\xff.root".decode("utf-8", "surrogateescape")  # as Python reads such an argument
    with pytest.raises(UsageError, match="not valid UTF-8"):
        parse_call(["--", REQID, "stage", not_utf8], {})
    with pytest.raises(UsageError, match="co-location path"):
        parse_call(["-C", "--", REQID, "stage", "/a"], {"XRDPREP_COLOC": not_utf8})


def test_escaped_text_holds_one_line() -> None:
    assert escaped("a\nb\tc\x1b") == "a\\nb\\tc\\x1b"
    assert escaped("/star/ä.root") == "/star/ä.root"
