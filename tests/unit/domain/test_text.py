"""The one rule for client text bound for the database: no NUL, no lone surrogate, and in one-line values
no control character."""

from __future__ import annotations

import pytest

from carousel.domain.text import json_text_fault, text_fault


@pytest.mark.parametrize(
    ("text", "one_line", "says"),
    [
        ("a\x00b", False, "NUL"),
        ("a\ud800b", False, "lone surrogate"),
        ("a\udcffb", True, "lone surrogate"),  # a byte that was not UTF-8, as Python keeps it
        ("a\nb", True, "control character"),
        ("a\tb", True, "control character"),
        ("a\x85b", True, "control character"),  # C1 NEL
        ("a\x7fb", True, "control character"),
    ],
)
def test_faults(text: str, one_line: bool, says: str) -> None:
    fault = text_fault(text, one_line=one_line)
    assert fault is not None and says in fault


@pytest.mark.parametrize("text", ["", "/star/ä/日本.root", "line one\nline two\ttab"])
def test_free_text_may_hold_line_breaks_and_any_character(text: str) -> None:
    assert text_fault(text, one_line=False) is None


def test_json_faults_name_where() -> None:
    assert json_text_fault({"a": [1, {"b": "x\x00"}]}, "options") == (
        "options.a[1].b",
        "contains a NUL character",
    )
    assert json_text_fault({"k\x00": 1}, "options") == ("options", "a key contains a NUL character")
    assert json_text_fault({"a": ["fine", 2, None, True]}, "options") is None
