"""Python's cyclic garbage collector held off while the cycle builds and plans over its snapshot.

A snapshot of a big queue allocates some hundred thousand short-lived objects (rows, tuples, the policy's
working values) that reference counting frees as soon as the step ends; none is cyclic garbage. While they are
alive, every few hundred allocations start a young collection that walks them, and those that survive two of
them are moved to the oldest generation, which wakes a full collection over the whole heap (every object the
process holds) every few cycles: 0.2 to 0.6 s a cycle at 20,000 tapes on a loaded machine, seconds once in a
while. Held off for the step, the collector never sees the temporaries: they are gone when it comes back, and
it goes on as before (cyclic garbage made meanwhile is collected then). The pause is process-wide (it is
Python's), short (the CPU-bound snapshot and plan, never an adapter call or a wait) and nests.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Hold:
    """Who holds the collector off now, and whether it ran before the first of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.was_enabled = False


_hold = _Hold()


@contextmanager
def collector_held() -> Iterator[None]:
    """Holds the collector off for the block; the last block to end (of any thread) restores it as it was."""
    with _hold.lock:
        if _hold.holders == 0:
            _hold.was_enabled = gc.isenabled()
            gc.disable()
        _hold.holders += 1
    try:
        yield
    finally:
        with _hold.lock:
            _hold.holders -= 1
            if _hold.holders == 0 and _hold.was_enabled:
                gc.enable()
