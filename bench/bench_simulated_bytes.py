"""What the simulated library's data path costs: checksums without bytes, and writing staged files.

Workloads, each against a baseline measured in the same run:
- checksum: the adler32 of N generated files of S bytes, computed arithmetically (no bytes made), against
  zlib's adler32 over the same bytes generated in memory chunk by chunk (no disk either);
- write: every file of make run's default library (or the first --files of it) written as the adapter writes a
  staged file to its destination, against `cp` of the same bytes (shutil.copyfile of the written files to new
  names on the same disk). The ratio says whether the library's writer keeps up with a plain copy.

Run: .venv/bin/python -m bench.bench_simulated_bytes
     (options: --checksum-files, --checksum-mb, --files, --dir)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import zlib
from pathlib import Path

from carousel.config import default_adapter_options
from carousel.domain.clock import ManualClock
from carousel.domain.sizes import decimal_size
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.simulated.content import CHUNK_BYTES, GeneratedContent, content_block


def adler32_over_bytes(path: str, size: int) -> str:
    """The baseline: the bytes made chunk by chunk in memory and summed by zlib."""
    chunk = content_block(path) * (CHUNK_BYTES // len(content_block(path)))
    value, left = 1, size
    while left >= len(chunk):
        value = zlib.adler32(chunk, value)
        left -= len(chunk)
    return f"{zlib.adler32(chunk[:left], value):08x}"


def bench_checksum(files: int, size: int) -> None:
    content = GeneratedContent()
    paths = [f"/bench/checksum/{n}.root" for n in range(files)]
    started = time.perf_counter()
    content.checksum("/bench/warm-up", 1)  # once per process: the fixed string and its prefix sums
    print(f"checksum: set-up once per process {(time.perf_counter() - started) * 1e3:.0f} ms")
    started = time.perf_counter()
    computed = [content.checksum(path, size) for path in paths]
    arithmetic_s = time.perf_counter() - started
    started = time.perf_counter()
    summed = [adler32_over_bytes(path, size) for path in paths]
    baseline_s = time.perf_counter() - started
    assert computed == summed, "the arithmetic must agree with zlib"
    print(
        f"checksum: {files} files of {decimal_size(size)}: arithmetic {arithmetic_s * 1e3:.1f} ms,"
        f" zlib over the bytes {baseline_s:.2f} s, ratio {arithmetic_s / baseline_s:.5f}"
    )


def bench_write(limit: int | None, scratch: Path) -> None:
    sim = build_simulated_adapter(default_adapter_options(), ManualClock())
    entries = list(sim.library.catalogue.values())[:limit]
    total = sum(entry.size_bytes for entry in entries)
    written, copied = scratch / "written", scratch / "copied"
    written.mkdir()
    copied.mkdir()
    started = time.perf_counter()
    for n, entry in enumerate(entries):
        failed = sim.writer.write(entry.path, entry.size_bytes, str(written / str(n)), 0.0)
        assert failed is None, failed
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    for n in range(len(entries)):
        shutil.copyfile(written / str(n), copied / str(n))
    copy_s = time.perf_counter() - started
    print(
        f"write: {len(entries)} files, {decimal_size(total)}: writer {write_s:.2f} s"
        f" ({total / write_s / 1e6:.0f} MB/s), cp {copy_s:.2f} s ({total / copy_s / 1e6:.0f} MB/s),"
        f" ratio {write_s / copy_s:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checksum-files", type=int, default=20)
    parser.add_argument("--checksum-mb", type=int, default=64)
    parser.add_argument(
        "--files", type=int, default=None, help="write only the first N default-library files"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temporary directory)"
    )
    args = parser.parse_args()
    bench_checksum(args.checksum_files, args.checksum_mb * 1_000_000 + 12_345)
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        bench_write(args.files, Path(scratch))


if __name__ == "__main__":
    main()
