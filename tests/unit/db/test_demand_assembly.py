"""The demand objects a store keeps: a tape whose rows did not change keeps its objects, a changed tape
(by the store's own fold or, read again, by anyone's) is built anew, and the answer is always what a fresh
assembly of the same rows gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from carousel.db.demand_assembly import DemandAssembly, Row
from carousel.domain.queue import QueueDemand

T0 = datetime(2026, 6, 1, tzinfo=UTC)
A_CMS = ("default", "A", "cms", "default", "Q")  # library, tape, group, class, kind


def of_default(table: list[Row]) -> list[tuple[str, Row]]:
    """Rows as the table gives them to an assembly: each with its library."""
    return [("default", row) for row in table]


def rows(*changes: Row) -> list[Row]:
    """Tapes A, B, C (queued, B also in flight), some rows replaced."""
    table: dict[tuple[str, str, str], Row] = {
        ("A", "atlas", "Q"): ("A", "Q", "default", "atlas", 3, 300, T0, 0, 0),
        ("A", "cms", "Q"): ("A", "Q", "default", "cms", 1, 100, T0 + timedelta(seconds=5), 2, 1),
        ("B", "atlas", "F"): ("B", "F", "default", "atlas", 2, 200, None, 0, 0),
        ("B", "atlas", "Q"): ("B", "Q", "default", "atlas", 4, 400, T0 - timedelta(seconds=9), 1, 0),
        ("C", "lhcb", "Q"): ("C", "Q", "default", "lhcb", 5, 500, T0 + timedelta(seconds=1), 0, 0),
    }
    for row in changes:
        table[(row[0], row[3], row[1])] = row
    return [table[key] for key in sorted(table)]


def fresh(table: list[Row]) -> QueueDemand:
    assembly = DemandAssembly()
    return assembly.assemble(assembly.reload(of_default(table), 1))


def test_unchanged_tapes_keep_their_objects_and_changed_ones_are_built_anew() -> None:
    assembly = DemandAssembly()
    first = assembly.assemble(assembly.reload(of_default(rows()), 1))
    assert [t.tape for t in first.tapes] == ["B", "A", "C"]  # oldest first
    cms = ("A", "Q", "default", "cms", 2, 250, T0 - timedelta(seconds=60), 3, 1)
    changed = assembly.apply({A_CMS: cms}, 2)
    assert (changed, assembly.version) == ({"A"}, 2)
    second = assembly.assemble(changed)
    assert second == fresh(rows(cms))
    before = {t.tape: t for t in first.tapes}
    after = {t.tape: t for t in second.tapes}
    assert after["B"] is before["B"] and after["C"] is before["C"]
    assert second.in_flight_tapes[0] is first.in_flight_tapes[0]
    assert (after["A"].files, after["A"].oldest, after["A"].max_priority) == (
        5,
        T0 - timedelta(seconds=60),
        3,
    )
    assert [t.tape for t in second.tapes] == ["A", "B", "C"]


def test_a_table_read_again_rebuilds_only_the_tapes_whose_rows_differ() -> None:
    assembly = DemandAssembly()
    first = assembly.assemble(assembly.reload(of_default(rows()), 1))
    table = [row for row in rows() if row[0] != "B"]  # B's files all left, by another fold
    changed = assembly.reload(of_default(table), 5)
    assert changed == {"B"}
    demand = assembly.assemble(changed)
    assert [t.tape for t in demand.tapes] == ["A", "C"]
    assert demand.tapes[0] is first.tapes[1]
    assert (demand.in_flight, demand.in_flight_tapes) == (0, ())
    assert demand == fresh(table)


def test_rows_without_files_and_files_backing_off() -> None:
    """A row below zero is not shown; a tape's substitute rows stand for its queued rows in one snapshot."""
    assembly = DemandAssembly()
    assembly.assemble(assembly.reload(of_default(rows()), 1))
    gone = assembly.apply(
        {
            A_CMS: ("A", "Q", "default", "cms", -1, -100, None, 0, 0),
            ("default", "A", "atlas", "default", "Q"): None,
        },
        2,
    )
    assert [t.tape for t in assembly.assemble(gone).tapes] == ["B", "C"]
    due = [("C", "Q", "default", "lhcb", 2, 200, T0 + timedelta(seconds=3), 0, 1)]
    with_backoff = assembly.assemble(set(), {"C": due})
    assert [(t.tape, t.files, t.retries) for t in with_backoff.tapes] == [("B", 4, 0), ("C", 2, 1)]
    after = assembly.assemble(set())  # the next snapshot has none backing off: C is built from its rows
    assert [(t.tape, t.files) for t in after.tapes] == [("B", 4), ("C", 5)]


def test_forgotten_copy_has_no_version() -> None:
    assembly = DemandAssembly()
    assembly.reload(of_default(rows()), 3)
    assembly.forget()
    assert assembly.version is None


def test_a_library_s_assembly_keeps_its_own_rows_only() -> None:
    """On a site of several libraries the same tape ID in two libraries is two tapes: one library's assembly
    takes its own fold's rows and leaves the other library's."""
    assembly = DemandAssembly("lto9")
    assembly.assemble(assembly.reload([("lto9", row) for row in rows()], 1))
    other = ("A", "Q", "default", "cms", 7, 700, T0, 0, 0)
    changed = assembly.apply({("lto7", "A", "cms", "default", "Q"): other}, 2)
    assert changed == set()
    demand = assembly.assemble(changed)
    tape_a = next(t for t in demand.tapes if t.tape == "A")
    assert tape_a.files == 4  # atlas 3 + cms 1, as before: lto7's 7 files are not lto9's
    assert assembly.version == 2
