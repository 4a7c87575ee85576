"""Disk lifetimes: how long a request wants its staged files kept on disk (its pin on each of them).

A lifetime is given as seconds (a number, or a string of digits) or as an ISO 8601 duration (PT1H, P1D,
P1DT12H; parsed by pydantic). Absent: the default; longer than the maximum: cut to it. Anything else, zero
or negative included, is bad input naming the field.
"""

from __future__ import annotations

import math
from datetime import timedelta
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from carousel.domain.errors import InvalidInput


@cache
def _durations() -> TypeAdapter[timedelta]:
    return TypeAdapter(timedelta)


def lifetime_seconds(value: Any, *, field: str, default_s: int, max_s: int) -> int:
    """The lifetime asked for, in whole seconds, defaulted and capped."""
    if value is None:
        return min(default_s, max_s)
    seconds = _seconds(value, field)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidInput(f"{field}: a lifetime must be positive, got {value!r}", field=field)
    return min(math.ceil(seconds), max_s)


def _seconds(value: Any, field: str) -> float:
    if isinstance(value, bool):
        raise InvalidInput(f"{field}: not a lifetime: {value!r}", field=field)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return float(text)
        if text.upper().startswith(("P", "-P")):
            try:
                return _durations().validate_python(text.upper()).total_seconds()
            except ValidationError:
                pass
    raise InvalidInput(
        f"{field}: not a lifetime: {value!r} (seconds, or an ISO 8601 duration such as PT1H or P1D)",
        field=field,
    )
