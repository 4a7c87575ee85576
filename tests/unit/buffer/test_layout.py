"""The buffer's layout: logical paths map under the root, and nothing leads outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from carousel.buffer.layout import BufferLayout, BufferUnwritable, UnsafePath


@pytest.fixture
def layout(tmp_path: Path) -> BufferLayout:
    layout = BufferLayout.at(tmp_path / "buffer")
    layout.prepare()
    return layout


def test_a_logical_path_lives_under_the_root_and_writes_go_to_a_sibling(layout: BufferLayout) -> None:
    assert layout.final_path("/data/run1/f.root") == layout.root / "data" / "run1" / "f.root"
    assert layout.incoming == layout.root.with_name("buffer.incoming")
    assert layout.incoming_path("42") == layout.incoming / "42"
    assert layout.logical_path(layout.final_path("/data/run1/f.root")) == "/data/run1/f.root"


@pytest.mark.parametrize(
    "path",
    [
        "/data/../../etc/passwd",
        "/..",
        "data/relative",
        "/data//f",
        "/data/./f",
        "/data/f\x00x",
        "/a\\..\\b",
        "/",
    ],
)
def test_traversal_and_odd_paths_are_refused(layout: BufferLayout, path: str) -> None:
    with pytest.raises(UnsafePath):
        layout.final_path(path)


@pytest.mark.parametrize("key", ["../x", "a/b", "", "x" * 65, "a\x00"])
def test_an_incoming_key_is_a_plain_name(layout: BufferLayout, key: str) -> None:
    with pytest.raises(UnsafePath):
        layout.incoming_path(key)


def test_a_symbolic_link_out_of_the_root_is_refused(layout: BufferLayout, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (layout.root / "data").symlink_to(outside)
    with pytest.raises(UnsafePath, match="outside the buffer"):
        layout.final_path("/data/f.root")
    (layout.root / "inside").mkdir()
    (layout.root / "link").symlink_to(layout.root / "inside")
    assert layout.final_path("/link/f.root") == layout.root / "link" / "f.root"  # within the root: allowed


def test_an_unwritable_directory_is_named(tmp_path: Path) -> None:
    in_the_way = tmp_path / "a-file"  # a file where a directory should be: unwritable even for root
    in_the_way.write_bytes(b"")
    with pytest.raises(BufferUnwritable, match=f"buffer directory {in_the_way / 'buffer'} is not writable"):
        BufferLayout.at(in_the_way / "buffer").prepare()


def test_the_sweep_removes_what_a_crash_left_half_written(layout: BufferLayout) -> None:
    (layout.incoming / "7").write_bytes(b"half")
    (layout.incoming / "odd").mkdir()
    (layout.incoming / "odd" / "x").write_bytes(b"x")
    staged = layout.final_path("/data/kept")
    staged.parent.mkdir(parents=True)
    staged.write_bytes(b"whole")
    assert layout.sweep_incoming() == 2
    assert list(layout.incoming.iterdir()) == []
    assert staged.read_bytes() == b"whole"


def test_remove_deletes_the_file_and_the_directories_it_leaves_empty(layout: BufferLayout) -> None:
    one, two = layout.final_path("/a/b/one"), layout.final_path("/a/two")
    one.parent.mkdir(parents=True)
    one.write_bytes(b"1")
    two.write_bytes(b"2")
    assert layout.remove(one)
    assert not (layout.root / "a" / "b").exists()
    assert two.exists()
    assert layout.remove(two)
    assert not (layout.root / "a").exists() and layout.root.is_dir()
    assert not layout.remove(two)
