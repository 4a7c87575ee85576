"""What the API process made at start is kept out of the garbage collector's full passes: with a simulated
library's catalogue in memory a full pass walked about 180,000 objects (120 ms, every thread stopped)."""

from __future__ import annotations

import gc

from carousel.cli.service import _settled


def test_objects_made_at_start_are_frozen() -> None:
    kept = [object() for _ in range(1000)]
    try:
        _settled()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
