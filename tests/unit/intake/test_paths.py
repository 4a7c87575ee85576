"""Path validation and normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import InvalidInput
from carousel.intake.paths import normalise_path, normalise_paths


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("/star/data/a.root", "/star/data/a.root"),
        ("//star///data//a.root", "/star/data/a.root"),
        ("/star/./data/a.root", "/star/data/a.root"),
        ("/star/data/", "/star/data"),
        ("/star/.hidden/..dots/a..b", "/star/.hidden/..dots/a..b"),
        ("/ünïcode/файл 1.root", "/ünïcode/файл 1.root"),
    ],
)
def test_normalised(raw: str, normalised: str) -> None:
    assert normalise_path(raw, max_bytes=4096) == normalised


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("relative/a.root", "not absolute"),
        ("", "not absolute"),
        ("/a/../etc/passwd", "'..' segment"),
        ("/a/..", "'..' segment"),
        ("/a\x00b", "NUL byte"),
        ("/a\nb", "control character"),
        ("/a\x7fb", "control character"),
        ("/a\x85b", "control character"),
        ("/a\udc80b", "not valid Unicode"),
        ("/", "names no file"),
        ("//./", "names no file"),
        ("/" + "x" * 4096, "longer than 4096 bytes"),
        ("/" + "é" * 2048, "longer than 4096 bytes"),  # 4097 bytes in UTF-8
    ],
)
def test_refused(raw: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        normalise_path(raw, max_bytes=4096)


def test_errors_name_the_field() -> None:
    with pytest.raises(InvalidInput) as caught:
        normalise_paths(["/ok", "/also/ok", "/bad/../x"], max_bytes=4096, field="files[{}].path")
    assert caught.value.field == "files[2].path"
    assert caught.value.detail.startswith("files[2].path: ")


@given(st.text(min_size=1, max_size=60))
def test_accepted_paths_are_canonical(raw: str) -> None:
    try:
        path = normalise_path("/" + raw, max_bytes=4096)
    except InvalidInput:
        return
    assert path.startswith("/")
    assert "//" not in path
    assert not path.endswith("/")
    assert ".." not in path.split("/")
    assert "." not in path.split("/")
    assert normalise_path(path, max_bytes=4096) == path  # idempotent
    path.encode("utf-8")
