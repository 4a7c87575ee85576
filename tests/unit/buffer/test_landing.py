"""Landing: verified by adler32, then moved atomically; a failed landing leaves nothing behind."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from carousel.buffer.landing import LandingFailed, adler32_of, land, normalised_checksum
from carousel.buffer.layout import BufferLayout

CONTENT = bytes(range(256)) * 5000  # over a chunk, so the checksum is streamed across reads


def adler(data: bytes) -> str:
    return f"{zlib.adler32(data):08x}"


@pytest.fixture
def layout(tmp_path: Path) -> BufferLayout:
    layout = BufferLayout.at(tmp_path / "buffer")
    layout.prepare()
    return layout


def test_good_bytes_land_under_their_path(layout: BufferLayout) -> None:
    incoming, final = layout.incoming_path("1"), layout.final_path("/data/run1/f.root")
    incoming.write_bytes(CONTENT)
    landed = land(incoming, final, adler(CONTENT))
    assert landed.checksum == adler(CONTENT) and landed.size_bytes == len(CONTENT)
    assert final.read_bytes() == CONTENT and not incoming.exists()
    assert adler32_of(final) == adler(CONTENT)


def test_without_an_expected_checksum_the_bytes_give_it(layout: BufferLayout) -> None:
    incoming = layout.incoming_path("1")
    incoming.write_bytes(b"abc")
    assert land(incoming, layout.final_path("/f"), None).checksum == adler(b"abc")


def test_a_mismatch_fails_and_leaves_nothing(layout: BufferLayout) -> None:
    incoming, final = layout.incoming_path("1"), layout.final_path("/data/f")
    incoming.write_bytes(CONTENT)
    with pytest.raises(
        LandingFailed, match=f"checksum mismatch: adler32 {adler(CONTENT)}, expected 00000001"
    ):
        land(incoming, final, "1")
    assert not incoming.exists() and not final.exists()


def test_missing_bytes_fail_with_the_destination(layout: BufferLayout) -> None:
    incoming = layout.incoming_path("9")
    with pytest.raises(LandingFailed, match=f"no bytes at the destination {incoming}"):
        land(incoming, layout.final_path("/f"), "00000001")


def test_an_os_error_while_landing_fails_the_attempt_and_removes_the_bytes(layout: BufferLayout) -> None:
    incoming = layout.incoming_path("1")
    incoming.write_bytes(b"abc")
    (layout.root / "ro").write_bytes(b"")  # a file where the final path's directory should be
    with pytest.raises(LandingFailed, match=r"landing in the buffer failed: (File exists|Not a directory)"):
        land(incoming, layout.final_path("/ro/sub/f"), adler(b"abc"))
    assert not incoming.exists()


def test_a_size_other_than_the_catalogues_fails(layout: BufferLayout) -> None:
    incoming = layout.incoming_path("1")
    incoming.write_bytes(b"abc")
    with pytest.raises(LandingFailed, match="size mismatch: 3 bytes, expected 4"):
        land(incoming, layout.final_path("/f"), None, expected_size=4)


@pytest.mark.parametrize(("given", "normal"), [("1", "00000001"), ("ABCDEF01", "abcdef01"), (None, None)])
def test_checksums_are_eight_lower_case_hex_digits(given: str | None, normal: str | None) -> None:
    assert normalised_checksum(given) == normal


@pytest.mark.parametrize("bad", ["", "xyz", "123456789"])
def test_a_malformed_checksum_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not an adler32"):
        normalised_checksum(bad)
