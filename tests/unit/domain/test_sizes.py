"""Byte counts for people: decimal units (1 GB = 10⁹ bytes), three significant digits (zeros kept), the unit
chosen after rounding."""

from __future__ import annotations

import pytest

from carousel.domain.sizes import decimal_size


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (999.7, "1.00 kB"),  # rounds up into the next unit, never "1e+03 B"
        (1000, "1.00 kB"),
        (12_345, "12.3 kB"),
        (999_700, "1.00 MB"),
        (94_000_000, "94.0 MB"),
        (1_260_000_000, "1.26 GB"),
        (4_000_557_105, "4.00 GB"),  # three digits with the zeros kept, as "4.04 GB" beside it
        (4_040_000_000, "4.04 GB"),
        (10**9, "1.00 GB"),
        (4 * 2**30, "4.29 GB"),  # the buffer's default capacity, 4 GiB: decimal, like everything else shown
        (360e6, "360 MB"),  # a drive's rate per second, as the dashboard writes it before "/s"
        (12 * 10**12, "12.0 TB"),
        (2**63 - 1, "9.22 EB"),  # the largest BIGINT
        (-1_500_000, "-1.50 MB"),
    ],
)
def test_sizes_read_in_decimal_units(count: float, shown: str) -> None:
    assert decimal_size(count) == shown
