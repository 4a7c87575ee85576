"""The simulated library's file content: the adler32 computed without the bytes equals the bytes' own."""

from __future__ import annotations

import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsm_adapters.simulated.content import (
    BLOCK_BYTES,
    CHUNK_BYTES,
    DirectoryContent,
    GeneratedContent,
    adler32_combine,
    adler32_repeated,
    content_block,
)

PATH = "/star/data/T00001/1.root"


def written(tmp_path: Path, path: str, size: int) -> bytes:
    destination = tmp_path / "out"
    GeneratedContent().write(path, size, str(destination))
    return destination.read_bytes()


@pytest.mark.parametrize(
    "size",
    [
        0,
        1,
        BLOCK_BYTES - 1,
        BLOCK_BYTES,
        BLOCK_BYTES + 1,
        CHUNK_BYTES,
        CHUNK_BYTES + 1,
        5 * CHUNK_BYTES + 4321,
    ],
)
def test_the_computed_checksum_is_the_checksum_of_the_written_bytes(tmp_path: Path, size: int) -> None:
    data = written(tmp_path, PATH, size)
    assert len(data) == size
    assert GeneratedContent().checksum(PATH, size) == f"{zlib.adler32(data):08x}"


def test_an_empty_file_has_the_adler32_of_nothing() -> None:
    assert GeneratedContent().checksum(PATH, 0) == "00000001"


def test_content_depends_on_the_path_alone(tmp_path: Path) -> None:
    size = BLOCK_BYTES + 100
    assert written(tmp_path, PATH, size) == written(tmp_path, PATH, size)
    other = written(tmp_path, "/star/data/T00001/2.root", size)
    assert other != written(tmp_path, PATH, size)
    assert GeneratedContent().checksum(PATH, size) != GeneratedContent().checksum(
        "/star/data/T00001/2.root", size
    )
    assert len(set(content_block(PATH))) > 200, "pseudo-random bytes, not a constant fill"


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_combine_is_the_adler32_of_the_concatenation(first: bytes, second: bytes) -> None:
    assert adler32_combine(zlib.adler32(first), zlib.adler32(second), len(second)) == zlib.adler32(
        first + second
    )


@given(st.binary(min_size=1, max_size=200), st.integers(min_value=0, max_value=40))
def test_repeating_is_the_adler32_of_the_repetition(block: bytes, count: int) -> None:
    assert adler32_repeated(zlib.adler32(block), len(block), count) == zlib.adler32(block * count)


def test_a_large_file_is_written_through_a_bounded_buffer(tmp_path: Path) -> None:
    size = 48 * CHUNK_BYTES + 7  # 48 MiB
    tracemalloc.start()
    try:
        GeneratedContent().write(PATH, size, str(tmp_path / "large"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "large").stat().st_size == size
    assert peak < 4 * CHUNK_BYTES, f"peak {peak} bytes: the file was held in memory"


def test_a_checksum_of_a_50000_file_catalogue_costs_no_bytes() -> None:
    # Multi-GB sizes: computing them by writing would take hours; the arithmetic takes well under a second.
    content = GeneratedContent()
    sums = {content.checksum(f"/big/{n}.root", 3_000_000_000 + n) for n in range(2_000)}
    assert len(sums) > 1_990


def test_real_files_are_copied_and_summed(tmp_path: Path) -> None:
    source = tmp_path / "source.root"
    source.write_bytes(bytes(range(256)) * 5000 + b"tail")
    content = DirectoryContent({"/a/source.root": source})
    size = source.stat().st_size
    assert content.checksum("/a/source.root", size) == f"{zlib.adler32(source.read_bytes()):08x}"
    content.write("/a/source.root", size, str(tmp_path / "copy"))
    assert (tmp_path / "copy").read_bytes() == source.read_bytes()
