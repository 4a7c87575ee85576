"""What the command adapter costs on top of running the HSM programs themselves.

Workloads, each timed through the adapter and against a baseline measured in the same run:
- stage: one batch of N files to an echo program that prints a STAGED line per file as it reads them
  (the adapter: parse every line, emit an event per file with seq and clock time, poll them);
  baseline: `subprocess.run` of the same program with the same standard input, output read whole, not parsed;
- lookup: N paths in one call to an echo program answering ON_TAPE for each; same baseline (the default
  `max_paths_per_call` of 1000 would add N/1000 - 1 program starts, each priced by the next line);
- per call: L lookups of one path each (the fixed price of a program start), against L bare `subprocess.run`s.

Run: .venv/bin/python -m bench.bench_command_adapter  (options: --files, --calls)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from carousel.domain.clock import SystemClock
from hsm_adapters.base import Batch, BatchFile
from hsm_adapters.command import build_command_adapter
from hsm_adapters.command.protocol import request_lines

ECHO_STAGE = """\
import json, sys
for line in sys.stdin:
    print(json.dumps({"key": json.loads(line)["key"], "status": "STAGED"}), flush=True)
"""
ECHO_LOOKUP = """\
import json, sys
for line in sys.stdin:
    path = json.loads(line)["path"]
    print(json.dumps({"path": path, "status": "ON_TAPE", "tape": "T1", "position_bytes": 0, "size_bytes": 1}))
"""


def baseline(argv: list[str], stdin: bytes) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        stage_program = Path(scratch) / "stage.py"
        stage_program.write_text(ECHO_STAGE)
        lookup_program = Path(scratch) / "lookup.py"
        lookup_program.write_text(ECHO_LOOKUP)
        stage_argv = [sys.executable, str(stage_program)]
        lookup_argv = [sys.executable, str(lookup_program)]
        adapter = build_command_adapter(
            {
                "lookup": {"argv": lookup_argv, "max_paths_per_call": args.files},
                "stage": {"argv": stage_argv},
                "queue_files": args.files + 1,
            },
            SystemClock(),
        )
        files = tuple(BatchFile(f"k{n}", f"/bench/{n:07d}.root", n, 1) for n in range(args.files))
        stage_stdin = request_lines(
            [
                {"key": f.key, "path": f.path, "position_bytes": f.position_bytes, "size_bytes": 1}
                for f in files
            ]
        )
        lookup_stdin = request_lines([{"path": f.path} for f in files])

        stage_base = baseline(stage_argv, stage_stdin)
        started = time.perf_counter()
        adapter.submit(Batch("bench", "T1", files))
        assert adapter.wait_idle(600)
        events = adapter.poll_events()
        stage_s = time.perf_counter() - started
        assert sum(e.kind == "FILE_STAGED" for e in events) == args.files

        lookup_base = baseline(lookup_argv, lookup_stdin)
        started = time.perf_counter()
        answers = adapter.lookup([f.path for f in files])
        lookup_s = time.perf_counter() - started
        assert len(answers) == args.files

        one = [files[0].path]
        call_base = statistics.median(
            baseline(lookup_argv, request_lines([{"path": one[0]}])) for _ in range(args.calls)
        )
        call_times = []
        for _ in range(args.calls):
            started = time.perf_counter()
            adapter.lookup(one)
            call_times.append(time.perf_counter() - started)
        call_s = statistics.median(call_times)
        adapter.close()

    print(
        f"stage, {args.files} files in one batch: {stage_s:.2f} s ({args.files / stage_s:,.0f} files/s), "
        f"baseline {stage_base:.2f} s, ratio {stage_s / stage_base:.2f}"
    )
    print(
        f"lookup, {args.files} paths in one call: {lookup_s:.2f} s ({args.files / lookup_s:,.0f} paths/s), "
        f"baseline {lookup_base:.2f} s, ratio {lookup_s / lookup_base:.2f}"
    )
    print(
        f"lookup, one path per call (median of {args.calls}): {call_s * 1000:.1f} ms, "
        f"baseline {call_base * 1000:.1f} ms, ratio {call_s / call_base:.2f}"
    )


if __name__ == "__main__":
    main()
