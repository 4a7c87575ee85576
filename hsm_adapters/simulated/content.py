"""The bytes of the simulated library's files: what a staged file holds, and its adler32, known beforehand.

Two sources. `GeneratedContent` makes every catalogue file's bytes from its path alone: one 64 KiB block per
path (a fixed pseudo-random block, rotated and masked by a hash of the path), repeated and cut to the file's
size. Its adler32 is computed without making the file: adler32 has a combine rule (zlib's
adler32_combine), so the checksum of a block repeated n times costs log n combines, and a lookup of a
50,000-file catalogue never touches a file's bytes. `DirectoryContent` copies real files (a catalogue built
from a directory, `directory_catalogue`); their adler32 is read once and remembered.

Writes go through a bounded buffer (a chunk of at most `CHUNK_BYTES`): a multi-GB file never sits in
memory. A write that fails raises OSError; the caller decides what the failure means.
"""

from __future__ import annotations

import hashlib
import random
import zlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import BinaryIO, Protocol

BLOCK_BYTES = 65_536
CHUNK_BYTES = 16 * BLOCK_BYTES  # what one write call hands the file system
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
    """adler32 of a `length`-byte string whose adler32 is `value`, repeated `count` times (doubling)."""
    result, result_length = 1, 0  # adler32 of nothing
    power, power_length = value, length
    while count:
        if count & 1:
            result = adler32_combine(result, power, power_length)
            result_length += power_length
        count >>= 1
        if count:
            power = adler32_combine(power, power, power_length)
            power_length *= 2
    return result


# --- generated content ------------------------------------------------------------------------------------


@cache
def _base_block() -> bytes:
    return random.Random(_BASE_SEED).randbytes(BLOCK_BYTES)


@cache
def _mask_table(mask: int) -> bytes:
    return bytes(byte ^ mask for byte in range(256))


def content_block(path: str) -> bytes:
    """The block a generated file repeats: the base block rotated and masked by a hash of the path."""
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest()
    rotation = int.from_bytes(digest[:4], "little") % BLOCK_BYTES
    base = _base_block()
    return (base[rotation:] + base[:rotation]).translate(_mask_table(digest[4]))


def generated_adler32(path: str, size: int) -> int:
    block = content_block(path)
    whole, rest = divmod(size, BLOCK_BYTES)
    value = adler32_repeated(zlib.adler32(block), BLOCK_BYTES, whole)
    return adler32_combine(value, zlib.adler32(block[:rest]), rest) if rest else value


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
