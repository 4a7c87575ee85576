"""Landing: bytes the library wrote into the incoming directory become a staged file in the buffer.

The bytes are read once, streamed through zlib's adler32 (what WLCG storage checks) and compared with the
checksum the library or the lookup gave; then fsync, an atomic rename into the final path and an fsync of
its directory. A reader therefore sees the whole file or none, and a crash at any point leaves at most a
file in the incoming directory, which the sweep at start removes. Missing bytes, a mismatch and any OSError
(ENOSPC, EIO, a read-only directory) raise LandingFailed with the reason; what was written is removed.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1024 * 1024


class LandingFailed(Exception):
    """The attempt's bytes cannot be staged; the reason says why (the read is retried on a later mount)."""


@dataclass(frozen=True, slots=True)
class Landed:
    size_bytes: int
    checksum: str  # adler32, 8 lower-case hex digits


def adler32_hex(value: int) -> str:
    return f"{value & 0xFFFFFFFF:08x}"


def adler32_of(path: Path) -> str:
    """The adler32 of a file, streamed (never the whole file in memory)."""
    value = 1
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            value = zlib.adler32(chunk, value)
    return adler32_hex(value)


def normalised_checksum(checksum: str | None) -> str | None:
    """An adler32 as 8 lower-case hex digits (libraries may drop leading zeros or use capitals)."""
    if checksum is None:
        return None
    text = checksum.strip().lower()
    if not text or len(text) > 8 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"not an adler32 checksum: {checksum!r}")
    return text.rjust(8, "0")


def land(incoming: Path, final: Path, expected: str | None, *, expected_size: int | None = None) -> Landed:
    """Verify `incoming` against `expected` (None: record what the bytes give) and `expected_size` (None: any
    size), and move it to `final`."""
    try:
        return _land(incoming, final, normalised_checksum(expected), expected_size)
    except LandingFailed:
        discard(incoming)
        raise
    except ValueError as exc:
        discard(incoming)
        raise LandingFailed(str(exc)) from exc
    except OSError as exc:
        discard(incoming)
        raise LandingFailed(f"landing in the buffer failed: {exc.strerror or exc}") from exc


def _land(incoming: Path, final: Path, expected: str | None, expected_size: int | None) -> Landed:
    try:
        handle = incoming.open("rb")
    except FileNotFoundError:
        raise LandingFailed(f"no bytes at the destination {incoming}") from None
    with handle:
        value, size = 1, 0
        while chunk := handle.read(CHUNK):
            value = zlib.adler32(chunk, value)
            size += len(chunk)
        got = adler32_hex(value)
        if expected_size is not None and size != expected_size:
            raise LandingFailed(f"size mismatch: {size} bytes, expected {expected_size}")
        if expected is not None and got != expected:
            raise LandingFailed(f"checksum mismatch: adler32 {got}, expected {expected}")
        os.fsync(handle.fileno())
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(incoming, final)
    _fsync_directory(final.parent)
    return Landed(size, got)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def discard(path: Path) -> None:
    """Remove a file if it is there."""
    with contextlib.suppress(OSError):
        path.unlink()
