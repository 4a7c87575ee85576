"""Tape states through the admin API, on both databases, with the scheduler stepped in virtual time over the
simulated library: a disabled tape is never mounted while disabled (its files wait, saying `tape_disabled`)
and is read once enabled; a broken tape's queued files fail with the admin's reason; the library's failed
mounts break a tape by themselves; every change is audited."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.models import Mount, QueuedFileRow
from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from policies.registry import build_policy
from tests.integration.api.conftest import LIBRARY_OPTIONS, Bearer, SyncApi, admin_on

ADMIN = "/api/admin/v1"
NATIVE = "/api/native/v1"


def submit(admin: Bearer, paths: list[str]) -> str:
    response = admin.api.request("POST", f"{NATIVE}/requests", json={"paths": paths}, headers=admin.headers)
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id


def set_tape(admin: Bearer, tape: str, state: str, reason: str) -> Any:
    response = admin.api.request(
        "PUT", f"{ADMIN}/tapes/{tape}/state", json={"state": state, "reason": reason}, headers=admin.headers
    )
    assert response.status_code == 200, response.text
    return response.json()


def states_of(factory: sessionmaker[Session], tape: str) -> dict[str, str | None]:
    with factory() as session:
        rows = session.execute(
            select(QueuedFileRow.state, QueuedFileRow.error).where(QueuedFileRow.tape == tape)
        )
        return {state: error for state, error in rows}


def mounted_tapes(factory: sessionmaker[Session]) -> set[str]:
    with factory() as session:
        return set(session.scalars(select(Mount.tape)))


def cycle_for(
    factory: sessionmaker[Session], library: SimulatedAdapter, clock: ManualClock, **extra: Any
) -> Cycle:
    return Cycle(Settings(policy="fifo", **extra), factory, library, build_policy("fifo"), clock)


def step(
    cycle: Cycle, clock: ManualClock, done: Callable[[], bool], *, max_cycles: int = 200, step_s: float = 1.0
) -> None:
    """A cycle, then `step_s` virtual seconds (the library runs 100 times faster), until done; bounded."""
    for _ in range(max_cycles):
        cycle.run_once()
        if done():
            return
        clock.advance(step_s)
    raise AssertionError(f"not done after {max_cycles} cycles")


def test_a_disabled_tape_is_never_mounted_while_disabled_and_is_read_once_enabled(
    admin: Bearer, library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    catalogue = library.library.catalogue
    held, other = catalogue.tapes[0], catalogue.tapes[1]
    paths = [e.path for e in catalogue.on_tape(held)[:3]] + [e.path for e in catalogue.on_tape(other)[:3]]
    changed = set_tape(admin, held, "disabled", "cartridge sent for inspection")
    assert changed["tape"]["state"] == "disabled" and changed["audit"]["who"] == "ops"
    request_id = submit(admin, paths)

    cycle = cycle_for(session_factory, library, clock)
    step(cycle, clock, lambda: set(states_of(session_factory, other)) == {"STAGED"})
    for _ in range(30):  # long after the other tape is done, the held one is still untouched
        report = cycle.run_once()
        assert report.plan is not None and held in report.plan.waiting
        clock.advance(1)
    assert states_of(session_factory, held) == {"QUEUED": None}
    assert held not in mounted_tapes(session_factory) and held not in library.library.mount_counts()

    outlook = admin.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]
    waiting = {w["code"]: w for w in outlook["waiting"]}
    assert waiting["tape_disabled"]["files"] == 3
    assert "cartridge sent for inspection" in waiting["tape_disabled"]["reason"]

    set_tape(admin, held, "active", "inspection passed")
    step(cycle, clock, lambda: set(states_of(session_factory, held)) == {"STAGED"})
    assert held in mounted_tapes(session_factory)
    trail = admin.get(f"{ADMIN}/media/audit").json()["entries"]
    assert [(e["name"], e["old_state"], e["new_state"], e["reason"]) for e in trail] == [
        (held, "disabled", "active", "inspection passed"),
        (held, "active", "disabled", "cartridge sent for inspection"),
    ]


def test_a_broken_tapes_queued_files_fail_with_the_admins_reason(
    admin: Bearer, library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    catalogue = library.library.catalogue
    tape = catalogue.tapes[2]
    request_id = submit(admin, [e.path for e in catalogue.on_tape(tape)[:4]])
    set_tape(admin, tape, "broken", "dropped by the robot, tape snapped")

    report = cycle_for(session_factory, library, clock).run_once()
    assert report.media is not None and report.media.failed_files == 4
    assert report.files_submitted == 0
    assert states_of(session_factory, tape) == {
        "FAILED": f"tape {tape} is broken: dropped by the robot, tape snapped"
    }
    files = admin.get(f"{NATIVE}/requests/{request_id}/files", params={"state": "FAILED"}).json()["files"]
    assert len(files) == 4 and all("tape snapped" in f["error"] for f in files)
    assert library.library.mount_counts() == {}
    shown = admin.get(f"{ADMIN}/tapes/{tape}").json()
    assert shown["state"] == "broken" and shown["files"] == {"FAILED": 4}


def test_archive_info_answers_lost_for_a_file_on_a_broken_tape(
    admin: Bearer, library: SimulatedAdapter
) -> None:
    catalogue = library.library.catalogue
    broken, other = catalogue.tapes[2], catalogue.tapes[3]
    paths = [catalogue.on_tape(broken)[0].path, catalogue.on_tape(other)[0].path]
    set_tape(admin, broken, "broken", "tape snapped")

    answer = admin.post("/api/v1/archiveinfo", json={"paths": paths}).json()

    # its one copy cannot be read (a stage of it fails); the other tape's file is on tape as before
    assert answer == [{"path": paths[0], "locality": "LOST"}, {"path": paths[1], "locality": "TAPE"}]


def test_the_librarys_failed_mounts_break_a_tape_audited_as_the_service(
    make_api: Callable[..., SyncApi], clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    options = {**LIBRARY_OPTIONS, "faults": {"bad_cartridges": ["T00004"]}}
    library = build_simulated_adapter(options, clock)
    try:
        admin = admin_on(make_api)
        paths = [e.path for e in library.library.catalogue.on_tape("T00004")]
        cycle = cycle_for(session_factory, library, clock, media={"break_after_failed_mounts": 2})

        submit(admin, paths[:2])  # the library tries the mount, fails, and fails the files itself
        step(cycle, clock, lambda: set(states_of(session_factory, "T00004")) == {"FAILED"})
        assert admin.get(f"{ADMIN}/tapes/T00004").json()["failed_mounts"] == 1
        assert admin.get(f"{ADMIN}/tapes/T00004").json()["state"] == "active"

        submit(admin, paths[2:4])  # the library refuses the cartridge again: two in a row
        step(cycle, clock, lambda: admin.get(f"{ADMIN}/tapes/T00004").json()["state"] == "broken")
        trail = admin.get(f"{ADMIN}/media/audit", params={"kind": "tape"}).json()["entries"]
        assert [(e["who"], e["name"], e["new_state"]) for e in trail] == [("service", "T00004", "broken")]
        assert "2 mounts in a row" in trail[0]["reason"] and "bad cartridge" in trail[0]["reason"]

        mounts_before = library.library.stats().mounts
        submit(admin, paths[4:6])  # carousel fails these itself: the library is not asked again
        report = cycle.run_once()
        assert report.media is not None and report.media.failed_files == 2 and report.files_submitted == 0
        assert library.library.stats().mounts == mounts_before
        with session_factory() as session:
            errors = set(
                session.scalars(select(QueuedFileRow.error).where(QueuedFileRow.path.in_(paths[4:6])))
            )
        assert errors == {f"tape T00004 is broken: {trail[0]['reason']}"}
    finally:
        library.close()


def test_files_already_with_the_library_are_taken_back_when_their_tape_is_disabled(
    admin: Bearer, library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    catalogue = library.library.catalogue
    tape = catalogue.tapes[5]
    submit(admin, [e.path for e in catalogue.on_tape(tape)[:3]])
    cycle = cycle_for(session_factory, library, clock)
    assert cycle.run_once().files_submitted == 3  # handed over; the library has not started them yet
    assert states_of(session_factory, tape) == {"SUBMITTED": None}

    set_tape(admin, tape, "disabled", "label damaged")
    report = cycle.run_once()  # at the same instant: nothing has started at the library
    assert report.media is not None and report.media.taken_back == 3
    assert states_of(session_factory, tape) == {"QUEUED": None}
    for _ in range(30):  # the library reads none of them while the tape is disabled
        cycle.run_once()
        clock.advance(1)
    assert states_of(session_factory, tape) == {"QUEUED": None}
    assert library.library.stats().files_staged == 0

    set_tape(admin, tape, "active", "label replaced")
    step(cycle, clock, lambda: set(states_of(session_factory, tape)) == {"STAGED"})
