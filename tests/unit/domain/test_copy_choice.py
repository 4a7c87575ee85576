"""Which library serves a copy soonest (carousel.domain.libraries): a copy on an active tape first, then on a
disabled tape, then on a broken one; among those the least estimated wait, the first named on a tie; a
library with no published costs has no estimate and comes last."""

from __future__ import annotations

import math

import pytest

from carousel.domain.libraries import CopyEstimate, copy_wait_s, soonest_copy
from carousel.domain.planning import LibraryCosts

COSTS = LibraryCosts(mount_s=30, unmount_s=20, rate_bytes_per_s=100, overhead_s=2, locate_s=((1, 40.0),))


def test_the_wait_is_the_backlog_over_the_drives_then_mount_locate_overhead_and_read() -> None:
    wait = copy_wait_s(COSTS, position_bytes=5, size_bytes=1000, queued_bytes=8000, drives=4)
    assert wait == pytest.approx(8000 / (100 * 4) + 30 + 40 + 2 + 1000 / 100)
    assert copy_wait_s(COSTS, position_bytes=0, size_bytes=0, queued_bytes=0, drives=4) == 32  # no locate
    assert copy_wait_s(None, position_bytes=0, size_bytes=0, queued_bytes=0, drives=4) == math.inf


def test_the_least_wait_wins_and_a_tie_goes_to_the_first_named() -> None:
    assert soonest_copy([CopyEstimate("a", 10.0), CopyEstimate("b", 5.0)]).library == "b"
    assert soonest_copy([CopyEstimate("a", 5.0), CopyEstimate("b", 5.0)]).library == "a"
    assert soonest_copy([CopyEstimate("a", math.inf), CopyEstimate("b", math.inf)]).library == "a"
    with pytest.raises(ValueError, match="no copy"):
        soonest_copy([])


def test_a_copy_on_an_active_tape_comes_before_a_disabled_one_before_a_broken_one() -> None:
    broken, disabled = CopyEstimate("a", 1.0, broken=True), CopyEstimate("b", 5.0, disabled=True)
    assert soonest_copy([broken, disabled, CopyEstimate("c", 10.0)]).library == "c"
    assert soonest_copy([broken, disabled]).library == "b"  # a disabled tape waits, a broken one fails
    # every copy on a broken tape: the soonest of them (the caller says whether a broken copy will do)
    assert soonest_copy([CopyEstimate("a", 9.0, broken=True), broken]) == broken
