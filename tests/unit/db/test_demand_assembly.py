"""The demand objects of a snapshot: a tape whose rows did not change keeps its objects, any change (whoever
made it) builds them anew, and the answer is always what a fresh assembly gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from carousel.db.demand_assembly import DemandAssembly, Row

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def rows(**changes: Row) -> list[Row]:
    """Tapes A, B, C (queued, B also in flight), with some rows replaced, by tape then group."""
    table: dict[tuple[str, str, str], Row] = {
        ("A", "atlas", "Q"): ("A", "Q", "default", "atlas", 3, 300, T0, 0, 0),
        ("A", "cms", "Q"): ("A", "Q", "default", "cms", 1, 100, T0 + timedelta(seconds=5), 2, 1),
        ("B", "atlas", "F"): ("B", "F", "default", "atlas", 2, 200, None, 0, 0),
        ("B", "atlas", "Q"): ("B", "Q", "default", "atlas", 4, 400, T0 - timedelta(seconds=9), 1, 0),
        ("C", "lhcb", "Q"): ("C", "Q", "default", "lhcb", 5, 500, T0 + timedelta(seconds=1), 0, 0),
    }
    for row in changes.values():
        table[(row[0], row[3], row[1])] = row
    return [table[key] for key in sorted(table)]


def test_unchanged_tapes_keep_their_objects_and_changed_ones_are_built_anew() -> None:
    assembly = DemandAssembly()
    first = assembly.assemble(rows())
    assert [t.tape for t in first.tapes] == ["B", "A", "C"]  # oldest first
    changed = rows(a=("A", "Q", "default", "cms", 2, 250, T0 - timedelta(seconds=60), 3, 1))
    second = assembly.assemble(changed)
    assert second == DemandAssembly().assemble(changed)
    before = {t.tape: t for t in first.tapes}
    after = {t.tape: t for t in second.tapes}
    assert after["B"] is before["B"] and after["C"] is before["C"]
    assert second.in_flight_tapes[0] is first.in_flight_tapes[0]
    assert after["A"] is not before["A"]
    assert (after["A"].files, after["A"].oldest, after["A"].max_priority) == (
        5,
        T0 - timedelta(seconds=60),
        3,
    )
    assert [t.tape for t in second.tapes] == ["A", "B", "C"]


def test_a_tape_whose_rows_are_gone_is_gone() -> None:
    assembly = DemandAssembly()
    assembly.assemble(rows())
    left = [row for row in rows() if row[0] != "B"]
    demand = assembly.assemble(left)
    assert [t.tape for t in demand.tapes] == ["A", "C"]
    assert (demand.in_flight, demand.in_flight_tapes) == (0, ())
    assert demand == DemandAssembly().assemble(left)
