"""Text that can be stored and logged as it is: what every client's value bound for the database is checked
against where it enters (the API's schemas, a token's claims).

PostgreSQL refuses a NUL character in text (SQLite keeps it, so the two would disagree); a lone surrogate,
valid in JSON as an escape, cannot be encoded to UTF-8 at all; and a control character in a one-line value
(a name, a path, a hint) forges lines in logs and in XRootD's answers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# C0 controls (NUL included), DEL and C1 controls
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def text_fault(text: str, *, one_line: bool = True) -> str | None:
    """Why `text` cannot be stored as it is, or None. Free text (`one_line=False`) may hold tabs and line
    breaks, never NUL."""
    if "\x00" in text:
        return "contains a NUL character"
    if _SURROGATE.search(text) is not None:
        return "is not valid Unicode text (it holds a lone surrogate)"
    if one_line:
        control = _CONTROL.search(text)
        if control is not None:
            return f"contains the control character {control.group()!r}"
    return None


def json_text_fault(value: Any, where: str) -> tuple[str, str] | None:
    """The first key or string in a JSON value that cannot be stored, as (where, why), or None."""
    if isinstance(value, str):
        fault = text_fault(value, one_line=False)
        return (where, fault) if fault is not None else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            fault = text_fault(str(key))
            if fault is not None:
                return (where, f"a key {fault}")
            found = json_text_fault(item, f"{where}.{key}")
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = json_text_fault(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None
