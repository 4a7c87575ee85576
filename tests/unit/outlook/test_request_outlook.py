"""A request's outlook read from a real projection: position, eta, the files the eta leaves out, and the
waiting reasons as codes with their files and the policy's words."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from carousel.domain.media import TapeState, held_words
from carousel.domain.queue import RequestWork
from carousel.outlook.projection import Projection, project
from carousel.outlook.request_outlook import NOT_PROJECTED, TAPE_UNKNOWN, request_outlook
from policies.registry import build_policy
from tests.unit.policies.snapshots import COSTS, MB, T0, busy, snapshot, tape


def two_drives_three_tapes() -> Projection:
    """A and B are mounted by the next cycle; C waits for a drive (tests/unit/outlook/test_projection.py)."""
    queue = snapshot(tape("A", 10, age_s=60), tape("B", 5, age_s=50), tape("C", 3, age_s=10), drives=2)
    return project(queue, build_policy("carousel").plan)


def test_eta_is_its_last_tape_and_position_its_first() -> None:
    projection = two_drives_three_tapes()

    outlook = request_outlook(projection, RequestWork(queued={"A": 1, "C": 2}))

    c = projection.tapes["C"]
    assert outlook.eta == c.eta and c.eta is not None and c.eta > projection.tapes["A"].eta  # type: ignore[operator]
    assert outlook.files_ahead == projection.tapes["A"].files_ahead == 0
    assert outlook.next_cycle == 1 and outlook.reading == 0 and outlook.unplanned == 0
    assert [(w.code, w.files, w.reason) for w in outlook.waiting] == [("no_free_drive", 2, "no free drive")]
    assert outlook.note is None and outlook.computed_at == T0


def test_a_request_on_the_waiting_tape_alone_has_the_files_read_before_it_ahead() -> None:
    projection = two_drives_three_tapes()

    outlook = request_outlook(projection, RequestWork(queued={"C": 3}))

    # B's 5 files start first on the drive C takes after it (A's 10 too, on the other drive)
    assert outlook.files_ahead == projection.tapes["C"].files_ahead == 15
    assert outlook.next_cycle == 0


def test_a_tape_not_worth_a_mount_yet_is_named_with_the_policys_words() -> None:
    queue = snapshot(tape("A", 2), drives=4, in_flight=(busy("X"), busy("Y"), busy("Z")))
    projection = project(queue, build_policy("carousel").plan)

    outlook = request_outlook(projection, RequestWork(queued={"A": 2}))

    (reason,) = outlook.waiting
    assert reason.code == "not_worth_mounting_yet" and reason.files == 2
    assert reason.reason == projection.plan.waiting["A"] and "gathering work" in reason.reason
    # the projection follows the policy until the tape is worth its mount: a time, later than a mount now
    assert outlook.eta is not None and outlook.eta > T0 + timedelta(
        seconds=COSTS.mount_s + COSTS.pass_s(2, 200 * MB)
    )


def test_files_being_read_count_as_reading_at_position_zero() -> None:
    queue = snapshot(in_flight=(busy("A", 3),), mounted=("A",))
    projection = project(queue, build_policy("carousel").plan)

    outlook = request_outlook(projection, RequestWork(in_flight={"A": 2}))

    assert outlook.reading == 2 and outlook.files_ahead == 0 and outlook.waiting == ()
    assert outlook.eta == projection.tapes["A"].eta and outlook.eta is not None


def test_retries_and_unknown_tapes_are_left_out_of_the_eta_and_named() -> None:
    projection = two_drives_three_tapes()
    due = T0 + timedelta(minutes=10)

    outlook = request_outlook(
        projection,
        RequestWork(
            queued={"A": 1},
            retry_pending=2,
            retry_due_at=due,
            tape_unknown=3,
            unknown_reason="the catalogue did not answer",
        ),
    )

    codes = {w.code: w for w in outlook.waiting}
    assert codes[TAPE_UNKNOWN].files == 3 and codes[TAPE_UNKNOWN].reason == "the catalogue did not answer"
    assert codes["retry_pending"].files == 2 and due.isoformat() in codes["retry_pending"].reason
    assert [w.code for w in outlook.waiting] == [TAPE_UNKNOWN, "retry_pending"]  # most files first
    assert outlook.unplanned == 5 and outlook.eta == projection.tapes["A"].eta
    assert outlook.note is not None and "5 file(s)" in outlook.note


def test_files_the_projection_has_not_seen_have_no_eta_yet() -> None:
    projection = two_drives_three_tapes()

    newer = request_outlook(projection, RequestWork(queued={"Z": 4}))
    grown = request_outlook(projection, RequestWork(queued={"C": 7}))  # C held 3 at the snapshot

    assert newer.eta is None and newer.files_ahead is None and newer.unplanned == 4
    assert [(w.code, w.files) for w in newer.waiting] == [(NOT_PROJECTED, 4)]
    assert newer.note == "none of its files is in the outlook yet"
    assert grown.eta is None and [(w.code, w.files) for w in grown.waiting] == [(NOT_PROJECTED, 7)]


def test_files_of_a_request_older_than_the_snapshot_are_not_said_to_be_submitted_since() -> None:
    projection = two_drives_three_tapes()
    work = RequestWork(queued={"Z": 1})  # moved onto Z from a broken tape's copy since the snapshot

    older = request_outlook(projection, work, submitted_at=projection.now - timedelta(seconds=1))
    newer = request_outlook(projection, work, submitted_at=projection.now)

    (moved,) = older.waiting
    assert moved.code == NOT_PROJECTED
    assert moved.reason == "queued on this tape after the outlook was made: in the next one"
    assert "submitted" not in moved.reason
    assert newer.waiting[0].reason == "submitted after the outlook was made: in the next one"


def test_an_offline_library_gives_the_reason_and_no_eta() -> None:
    projection = project(snapshot(tape("A", 2), online=False), build_policy("carousel").plan)

    outlook = request_outlook(projection, RequestWork(queued={"A": 2}))

    assert outlook.eta is None and outlook.unplanned == 2
    assert [(w.code, w.files) for w in outlook.waiting] == [("library_offline", 2)]
    assert outlook.note == projection.note and outlook.note is not None and "offline" in outlook.note


def test_a_group_over_its_share_is_named() -> None:
    fair = build_policy("carousel", {"fair_share": {"weights": {"atlas": 1, "cms": 1}}})
    queue = snapshot(
        tape("A", 2, group="atlas"),
        tape("B", 2, group="atlas", age_s=10),
        tape("C", 2, group="cms"),
        drives=2,
        in_flight=(busy("X", group="atlas"),),
    )
    projection = project(queue, fair.plan)

    outlook = request_outlook(projection, RequestWork(queued={"B": 2, "C": 1}))

    assert [(w.code, w.files) for w in outlook.waiting] == [("group_over_share", 2)]
    assert outlook.next_cycle == 1 and outlook.eta is not None


def test_files_of_a_tape_an_admin_holds_back_wait_with_its_reason_and_no_eta() -> None:
    # the store left the disabled tape D out of the snapshot; the plan names it waiting with the admin's words
    queue = replace(
        snapshot(tape("A", 2, age_s=60), drives=2), held={"D": held_words(TapeState.DISABLED, "repack")}
    )
    projection = project(queue, build_policy("carousel").plan)

    outlook = request_outlook(projection, RequestWork(queued={"A": 1, "D": 3}))

    assert "D" not in projection.tapes and projection.plan.waiting["D"] == "tape disabled by an admin: repack"
    assert [(w.code, w.files, w.reason) for w in outlook.waiting] == [
        ("tape_disabled", 3, "tape disabled by an admin: repack")
    ]
    assert outlook.unplanned == 3 and outlook.eta == projection.tapes["A"].eta
    broken = request_outlook(
        project(replace(queue, held={"D": held_words(TapeState.BROKEN, None)}), build_policy("fifo").plan),
        RequestWork(queued={"D": 2}),
    )
    assert [(w.code, w.files) for w in broken.waiting] == [("tape_broken", 2)] and broken.eta is None


def test_a_held_tape_with_files_at_the_library_has_those_in_the_eta() -> None:
    # D was disabled after some of its files went to the library: those are read, the queued ones wait
    held = {"D": held_words(TapeState.DISABLED, "repack")}
    queue = replace(snapshot(tape("A", 2, age_s=60), drives=2, in_flight=(busy("D"),)), held=held)
    projection = project(queue, build_policy("carousel").plan)

    outlook = request_outlook(projection, RequestWork(queued={"D": 3}, in_flight={"D": 1}))

    assert [(w.code, w.files) for w in outlook.waiting] == [("tape_disabled", 3)]
    assert outlook.reading == 1 and outlook.unplanned == 3
    assert outlook.eta == projection.tapes["D"].eta and outlook.eta is not None
