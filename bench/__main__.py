"""Run every benchmark (each bench/bench_*.py module, with its default options), one process each."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path


def main() -> int:
    folder = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if m.name.startswith("bench_"))
    failed = []
    for name in names:
        print(f"== bench.{name}", flush=True)
        if subprocess.run([sys.executable, "-m", f"bench.{name}"], check=False).returncode:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
