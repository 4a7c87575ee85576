"""Byte counts for people, spelled one way wherever carousel shows them (the dashboard, the simulated
library's one-line description in the start-up banner): decimal units, as tape vendors give cartridge sizes
and drive rates and as the reports and their figures use them (1 GB = 10⁹ bytes)."""

from __future__ import annotations

DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


def decimal_size(count: float) -> str:
    """Three significant digits, trailing zeros kept so that sizes side by side read alike: 1,260,000,000 ->
    "1.26 GB", 4,000,557,105 -> "4.00 GB" (beside "4.04 GB", never "4 GB"), 94,000,000 -> "94.0 MB",
    999,700 -> "1.00 MB". Bytes are whole: "999 B"."""
    value = float(count)
    if abs(value) < 999.5:
        return f"{value:.0f} B"
    for unit in DECIMAL_UNITS[1:]:
        value /= 1000
        shown = f"{value:#.3g}".rstrip(".")  # "#" keeps the zeros; 360 is "360", not "360."
        # the unit is chosen after rounding: 999.7 kB is "1 MB", never "1e+03 kB"
        if abs(float(shown)) < 1000:
            return f"{shown} {unit}"
    return f"{value:,.0f} {DECIMAL_UNITS[-1]}"
