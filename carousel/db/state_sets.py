"""The domain's sets of file states (carousel.domain.states) in SQL: what `WHERE state IN (...)` lists."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import ColumnElement, or_
from sqlalchemy.orm import InstrumentedAttribute

from carousel.domain.states import FileState


def values(states: Iterable[FileState]) -> list[str]:
    """The states' values in a fixed order (a frozenset's order changes from one process to the next)."""
    return sorted(state.value for state in states)


def quoted(states: Iterable[FileState]) -> str:
    """The states as a list of SQL literals, for statements written in SQL: 'A', 'B'."""
    return ", ".join(f"'{value}'" for value in values(states))


def one_of(column: InstrumentedAttribute[str], states: Iterable[FileState]) -> ColumnElement[bool]:
    """column IN states written as one comparison per state: an expanding IN cannot go with executemany."""
    return or_(*(column == value for value in values(states)))
