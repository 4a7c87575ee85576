"""Disk lifetimes as clients give them: seconds or ISO 8601 durations, defaulted, capped, bad ones named."""

from __future__ import annotations

from typing import Any

import pytest

from carousel.domain.errors import InvalidInput
from carousel.intake.lifetimes import lifetime_seconds

FIELD = "files[2].diskLifetime"


def seconds(value: Any) -> int:
    return lifetime_seconds(value, field=FIELD, default_s=86_400, max_s=7 * 86_400)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, 86_400),
        (3600, 3600),
        (1.5, 2),  # whole seconds, never shorter than asked
        ("120", 120),
        ("PT1H", 3600),
        ("pt30m", 1800),
        ("P1D", 86_400),
        ("P1DT12H", 129_600),
        ("P30D", 7 * 86_400),  # capped at the maximum
        (10**9, 7 * 86_400),
    ],
)
def test_lifetimes_in_seconds(given: Any, expected: int) -> None:
    assert seconds(given) == expected


@pytest.mark.parametrize("bad", ["soon", "1h", "-PT1H", "PT0S", 0, -5, True, [], {}, "P", float("nan")])
def test_a_bad_lifetime_names_its_field(bad: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        seconds(bad)
    assert caught.value.field == FIELD and caught.value.detail.startswith(FIELD)
