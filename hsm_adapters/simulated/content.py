"""The bytes of the simulated library's files: what a staged file holds, and its adler32, known beforehand.

Two sources. `GeneratedContent` makes every catalogue file's bytes from its path alone: a 64 KiB block per
path (the window of a fixed 1 MiB pseudo-random string at an offset drawn from a hash of the path), repeated
and cut to the file's size. Its adler32 is computed without making the file: the adler32 of a window comes
from prefix sums of the fixed string, and adler32 has a combine rule (zlib's adler32_combine), so the
checksum of a block repeated n times has a closed form. A lookup never touches a file's bytes.
`DirectoryContent` copies real files (a catalogue built from a directory, `directory_catalogue`); their
adler32 is read once and remembered.

Writes go through a bounded buffer (a chunk of at most `CHUNK_BYTES`): a multi-GB file never sits in
memory. A write that fails raises OSError; the caller decides what the failure means.
"""

from __future__ import annotations

import hashlib
import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np
import numpy.typing as npt

BLOCK_BYTES = 65_536
CHUNK_BYTES = 16 * BLOCK_BYTES  # what one write call hands the file system
BASE_BYTES = 1 << 20  # the fixed string blocks are windows of: a million distinct blocks
_ADLER_MOD = 65_521
_BASE_SEED = "carousel simulated library content"


class FileContent(Protocol):
    """What the adapter needs from a source of bytes."""

    def checksum(self, path: str, size: int) -> str:
        """The file's adler32 as 8 lower-case hex digits."""
        ...

    def write(self, path: str, size: int, destination: str) -> None:
        """Write the whole file to `destination` (created or truncated) and close it; OSError on failure."""
        ...


def format_adler32(value: int) -> str:
    return f"{value:08x}"


# --- adler32 arithmetic -----------------------------------------------------------------------------------


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """adler32 of X + Y from adler32(X), adler32(Y) and len(Y) (zlib's adler32_combine)."""
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_MOD
    b = (b1 + b2 + second_length * (a1 - 1)) % _ADLER_MOD
    return (b << 16) | a


def adler32_repeated(value: int, length: int, count: int) -> int:
    """adler32 of a `length`-byte string whose adler32 is `value`, repeated `count` times.

    Combining the k-th copy adds the string's sum s to A and b + length·k·s to B, so in closed form
    A = 1 + count·s and B = count·b + length·s·count·(count − 1)/2."""
    total, b = (value & 0xFFFF) - 1, value >> 16
    a = (1 + count * total) % _ADLER_MOD
    b = (count * b + length * total * (count * (count - 1) // 2)) % _ADLER_MOD
    return (b << 16) | a


# --- generated content ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Base:
    """The fixed string (wrapped by one block, so every window is a plain slice) and its prefix sums."""

    data: bytes
    sums: npt.NDArray[np.int64]  # sums[k]: sum of data[:k]
    weighted: npt.NDArray[np.int64]  # weighted[k]: sum of j * data[j] for j < k (under 2^49)

    def window_adler32(self, offset: int, length: int) -> int:
        """adler32 of data[offset:offset + length], from the prefix sums: A = 1 + Σ x_j and
        B = length + Σ (length − (j − offset))·x_j = length + (length + offset)·Σ x_j − Σ j·x_j."""
        end = offset + length
        total = int(self.sums[end] - self.sums[offset])
        weighted = int(self.weighted[end] - self.weighted[offset])
        a = (1 + total) % _ADLER_MOD
        b = (length + (length + offset) * total - weighted) % _ADLER_MOD
        return (b << 16) | a


@cache
def _base() -> _Base:
    base = random.Random(_BASE_SEED).randbytes(BASE_BYTES)
    data = base + base[:BLOCK_BYTES]
    values = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    sums = np.concatenate(([0], np.cumsum(values)))
    weighted = np.concatenate(([0], np.cumsum(values * np.arange(len(values), dtype=np.int64))))
    return _Base(data, sums, weighted)


def _offset(path: str) -> int:
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % BASE_BYTES


def content_block(path: str) -> bytes:
    """The block a generated file repeats: the window of the fixed string at the path's offset."""
    offset = _offset(path)
    return _base().data[offset : offset + BLOCK_BYTES]


def generated_adler32(path: str, size: int) -> int:
    base, offset = _base(), _offset(path)
    whole, rest = divmod(size, BLOCK_BYTES)
    value = adler32_repeated(base.window_adler32(offset, BLOCK_BYTES), BLOCK_BYTES, whole)
    return adler32_combine(value, base.window_adler32(offset, rest), rest) if rest else value


def write_generated(block: bytes, size: int, stream: BinaryIO) -> None:
    chunk = block * (CHUNK_BYTES // len(block))
    left = size
    while left >= len(chunk):
        stream.write(chunk)
        left -= len(chunk)
    if left:
        stream.write(chunk[:left])


class GeneratedContent:
    """Bytes made from the path: the same path and size always give the same bytes."""

    def checksum(self, path: str, size: int) -> str:
        return format_adler32(generated_adler32(path, size))

    def write(self, path: str, size: int, destination: str) -> None:
        with open(destination, "wb") as stream:
            write_generated(content_block(path), size, stream)


# --- real files -------------------------------------------------------------------------------------------


def file_adler32(source: Path) -> int:
    value = 1
    with source.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            value = zlib.adler32(chunk, value)
    return value


class DirectoryContent:
    """The bytes of real files: catalogue path -> the file that holds them. Checksums are read once."""

    def __init__(self, sources: Mapping[str, Path]) -> None:
        self._sources = dict(sources)
        self._checksums: dict[str, str] = {}

    def source(self, path: str) -> Path:
        return self._sources[path]

    def checksum(self, path: str, size: int) -> str:
        known = self._checksums.get(path)
        if known is None:
            known = self._checksums[path] = format_adler32(file_adler32(self._sources[path]))
        return known

    def write(self, path: str, size: int, destination: str) -> None:
        with self._sources[path].open("rb") as source, open(destination, "wb") as target:
            while chunk := source.read(CHUNK_BYTES):
                target.write(chunk)
