"""Several libraries behind one queue (docs/decisions.md §15): a library's name, and the unit fair share
accounts drive time in across libraries of different drive generations.

A drive-second of a slow drive is not one of a fast drive: usage is counted in reference drive-seconds, a
library's drive-seconds times its native rate over the site's reference rate (its fastest library's). A site
of one library weighs 1 and accounts exactly as it always did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DEFAULT_LIBRARY = "default"  # the one library of a site that names none
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def library_name_problem(name: str) -> str | None:
    """Why `name` cannot name a library, or None when it can."""
    if _NAME.fullmatch(name) is None:
        return f"{name!r} is not a library name: 1 to 32 of a-z, 0-9, '_' and '-', a letter or digit first"
    return None


def usage_weights(rates_bytes_per_s: Mapping[str, float]) -> dict[str, float]:
    """Per library, what one of its drive-seconds counts in reference drive-seconds: its native rate over the
    fastest library's."""
    if not rates_bytes_per_s:
        return {}
    for name, rate in rates_bytes_per_s.items():
        if not rate > 0:
            raise ValueError(f"library {name!r}: the native rate must be positive, not {rate}")
    reference = max(rates_bytes_per_s.values())
    return {name: rate / reference for name, rate in rates_bytes_per_s.items()}
