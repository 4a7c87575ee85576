"""Every duration the dashboard shows, written by one rule: rounded first, under 10 s to a tenth (a simulated
library on a fast clock reads in fractions of a second), then whole seconds, minutes and seconds, hours and
minutes, days and hours."""

from __future__ import annotations

import pytest

from carousel.dashboard.render import human_duration


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "–"),
        (0, "0 s"),
        (-3, "0 s"),  # a clock that stepped back: never a negative duration
        (0.02, "< 0.1 s"),  # some reading, not none
        (0.4, "0.4 s"),  # was "0 s" beside an efficiency of 13.8 %
        (0.96, "1.0 s"),
        (9.94, "9.9 s"),
        (9.96, "10 s"),  # rounds into whole seconds, never "10.0 s"
        (42.4, "42 s"),
        (59.7, "1 min 00 s"),  # rounded before the unit is chosen: never "60 s"
        (754, "12 min 34 s"),
        (3599.6, "1 h 00 min"),  # never "59 min 60 s"
        (5 * 3600 + 7 * 60 + 20, "5 h 07 min"),
        (86_399, "1 d 0 h"),
        (2 * 86_400 + 3 * 3600 + 1200, "2 d 3 h"),
    ],
)
def test_durations_read_alike_everywhere_on_the_page(seconds: float | None, shown: str) -> None:
    assert human_duration(seconds) == shown
