"""String fields of request bodies that end in the database: refused with 400 naming the field when they
hold what cannot be stored (carousel.domain.text)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

from carousel.domain.text import json_text_fault, text_fault


def _one_line(value: str) -> str:
    fault = text_fault(value)
    if fault is not None:
        raise ValueError(fault)
    return value


def _free_text(value: str) -> str:
    fault = text_fault(value, one_line=False)
    if fault is not None:
        raise ValueError(fault)
    return value


def storable_json(value: Any) -> Any:
    """For a field holding any JSON (a policy's options): every key and string storable."""
    found = json_text_fault(value, "")
    if found is not None:
        where, why = found
        raise ValueError(f"{where.lstrip('.') or 'the value'} {why}" if where else why)
    return value


OneLine = Annotated[str, AfterValidator(_one_line)]  # a name, a path, a hint: no control characters
FreeText = Annotated[str, AfterValidator(_free_text)]  # a reason: line breaks allowed, never NUL
