"""`carousel scheduler` under cProfile, every thread profiled (the cycle runs in APScheduler's threads, the
events pump in one of its own): for bench_end_to_end's `--profile`. The statistics of all threads, merged,
go to the file named by CAROUSEL_BENCH_PROFILE when the scheduler stops (SIGTERM or SIGINT).

Run: CAROUSEL_BENCH_PROFILE=out.pstats python -m bench.profiled_scheduler
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import threading
from types import FrameType
from typing import Any

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _profile_this_thread(_frame: FrameType, _event: str, _arg: Any) -> None:
    # the first profile event of a new thread: hand the thread to a profiler of its own
    sys.setprofile(None)
    profile = cProfile.Profile()
    with _lock:
        _profiles.append(profile)
    profile.enable()


def main() -> int:
    out = os.environ["CAROUSEL_BENCH_PROFILE"]
    from carousel.cli.app import app  # noqa: PLC0415 - after the profiling hook is in place

    threading.setprofile(_profile_this_thread)
    main_profile = cProfile.Profile()
    main_profile.enable()
    try:
        app(["scheduler"], standalone_mode=False)
    finally:
        main_profile.disable()
        for profile in _profiles:
            profile.disable()
        stats = pstats.Stats(main_profile)
        for profile in _profiles:
            stats.add(profile)
        stats.dump_stats(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
