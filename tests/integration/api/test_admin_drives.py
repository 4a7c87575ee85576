"""Drives through the admin API, on both databases, with the scheduler stepped in virtual time over the
simulated library: a drive taken down after its mount finishes it and takes no new mount until it is up; one
taken down at once stops, and its file is read again on another drive; capacity follows. And bad input to
the tape and drive calls: 4xx naming the field, nothing changed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.config.auth import AuthSettings
from carousel.db.models import DriveStateRow, MediaAudit, Mount, QueuedFileRow, TapeStateRow
from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter
from policies.registry import build_policy
from tests.integration.api.conftest import Bearer, SyncApi, admin_on, assert_problem
from tests.integration.api.test_admin_tapes import ADMIN, cycle_for, step, submit
from tests.tokens import static_token


def set_drive(admin: Bearer, drive: str, body: dict[str, Any]) -> Any:
    return admin.api.request("PUT", f"{ADMIN}/drives/{drive}/state", json=body, headers=admin.headers)


def mounts(factory: sessionmaker[Session]) -> list[tuple[str, str | None]]:
    with factory() as session:
        rows = session.execute(select(Mount.tape, Mount.drive).order_by(Mount.id))
        return [(tape, drive) for tape, drive in rows]


def staged(factory: sessionmaker[Session], tape: str) -> bool:
    with factory() as session:
        states = set(session.scalars(select(QueuedFileRow.state).where(QueuedFileRow.tape == tape)))
    return states == {"STAGED"}


def test_a_drive_down_after_its_mount_finishes_it_and_takes_no_new_mount_until_up(
    admin: Bearer, library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    catalogue = library.library.catalogue
    first, second, third = catalogue.tapes[:3]
    cycle = cycle_for(session_factory, library, clock)
    listed = admin.get(f"{ADMIN}/drives").json()["drives"]
    assert [(d["drive"], d["state"]) for d in listed] == [("drive00", "up"), ("drive01", "up")]
    down = set_drive(admin, "drive01", {"state": "down", "mode": "now", "reason": "cleaning"})
    assert down.status_code == 200, down.text
    cycle.run_once()
    assert library.capacity().drives_total == 1

    submit(admin, [e.path for e in catalogue.on_tape(first)[:3]])
    step(cycle, clock, lambda: bool(mounts(session_factory)))  # drive00 holds the first tape
    assert mounts(session_factory) == [(first, "drive00")]
    answer = set_drive(admin, "drive00", {"state": "down", "reason": "firmware update"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["drive"]["mode"] == "after_mount"
    submit(admin, [e.path for e in catalogue.on_tape(second)[:2]])
    step(cycle, clock, lambda: staged(session_factory, first))  # the mount it had is finished
    for _ in range(40):  # both drives down: the second tape waits, nothing mounts
        cycle.run_once()
        clock.advance(1)
    assert mounts(session_factory) == [(first, "drive00")]
    assert library.capacity().drives_total == 0

    assert set_drive(admin, "drive01", {"state": "up", "reason": "clean"}).status_code == 200
    step(cycle, clock, lambda: staged(session_factory, second))
    assert mounts(session_factory)[1:] == [(second, "drive01")]
    assert set_drive(admin, "drive00", {"state": "up", "reason": "updated"}).status_code == 200
    cycle.run_once()
    assert library.capacity().drives_total == 2
    submit(admin, [e.path for e in catalogue.on_tape(third)[:1]])
    step(cycle, clock, lambda: staged(session_factory, third))
    trail = admin.get(f"{ADMIN}/media/audit", params={"kind": "drive"}).json()["entries"]
    assert [(e["name"], e["new_state"], e["reason"]) for e in reversed(trail)] == [
        ("drive01", "down (now)", "cleaning"),
        ("drive00", "down (after_mount)", "firmware update"),
        ("drive01", "up", "clean"),
        ("drive00", "up", "updated"),
    ]


def test_a_drive_down_at_once_stops_and_its_file_is_read_again_on_another(
    admin: Bearer, library: SimulatedAdapter, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    tape = library.library.catalogue.tapes[4]
    cycle = cycle_for(session_factory, library, clock)
    submit(admin, [e.path for e in library.library.catalogue.on_tape(tape)[:4]])
    # small steps (a twentieth of a second: five library seconds) to stop the drive in the middle of its mount
    step(cycle, clock, lambda: bool(mounts(session_factory)), step_s=0.05, max_cycles=2000)
    assert not staged(session_factory, tape)
    now = {"state": "down", "mode": "now", "reason": "drive error"}
    assert set_drive(admin, "drive00", now).status_code == 200
    step(cycle, clock, lambda: staged(session_factory, tape))
    assert mounts(session_factory) == [(tape, "drive00"), (tape, "drive01")]


def counts(factory: sessionmaker[Session]) -> tuple[int, int, int]:
    with factory() as session:
        return tuple(  # type: ignore[return-value]
            int(session.scalar(select(func.count()).select_from(model)) or 0)
            for model in (TapeStateRow, DriveStateRow, MediaAudit)
        )


@pytest.mark.parametrize(
    ("url", "body", "status", "field"),
    [
        ("/tapes/T99999/state", {"state": "disabled", "reason": "x"}, 404, "tape"),  # a tape in no library
        ("/tapes/T00001/state", {"state": "active", "reason": "x"}, 409, "state"),  # active already
        ("/tapes/T00001/state", {"state": "lost", "reason": "x"}, 400, "state"),
        ("/tapes/T00001/state", {"state": "disabled", "reason": "   "}, 400, "reason"),
        ("/tapes/T00001/state", {"state": "disabled", "reason": ""}, 400, "reason"),
        ("/tapes/T00001/state", {"state": "disabled", "reason": "two\nlines"}, 400, "reason"),
        ("/tapes/T00001/state", {"state": "disabled"}, 400, "reason"),
        ("/tapes/T00001/state", {"state": "disabled", "reason": "x", "force": True}, 400, "force"),
        (f"/tapes/{'T' * 65}/state", {"state": "disabled", "reason": "x"}, 400, "tape"),
        ("/tapes/T%01/state", {"state": "disabled", "reason": "x"}, 400, "tape"),
        ("/drives/drive07/state", {"state": "down", "reason": "x"}, 404, "drive"),
        ("/drives/drive00/state", {"state": "up", "reason": "x"}, 409, "state"),  # up already
        (
            "/drives/drive00/state",
            {"state": "up", "mode": "now", "reason": "x"},
            400,
            "mode",
        ),  # contradictory
        ("/drives/drive00/state", {"state": "down", "mode": "later", "reason": "x"}, 400, "mode"),
        ("/drives/drive00/state", {"state": "down", "reason": "\x00"}, 400, "reason"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field_and_changes_nothing(
    admin: Bearer,
    session_factory: sessionmaker[Session],
    url: str,
    body: dict[str, Any],
    status: int,
    field: str,
) -> None:
    response = admin.api.request("PUT", f"{ADMIN}{url}", json=body, headers=admin.headers)
    assert_problem(response, status, field=field)
    assert counts(session_factory) == (0, 0, 0)


def test_a_contradictory_tape_change_changes_nothing(
    admin: Bearer, session_factory: sessionmaker[Session]
) -> None:
    put = {"state": "disabled", "reason": "inspection"}
    first = admin.api.request("PUT", f"{ADMIN}/tapes/T00003/state", json=put, headers=admin.headers)
    assert first.status_code == 200, first.text
    again = admin.api.request("PUT", f"{ADMIN}/tapes/T00003/state", json=put, headers=admin.headers)
    assert_problem(again, 409, field="state", says="disabled already")
    assert counts(session_factory) == (1, 0, 1)
    assert_problem(admin.get(f"{ADMIN}/tapes/T99999"), 404, field="tape")
    assert_problem(admin.get(f"{ADMIN}/media/audit", params={"cursor": "abc"}), 400, field="cursor")


def test_only_admins_set_tapes_and_drives(
    make_api: Callable[..., SyncApi], session_factory: sessionmaker[Session]
) -> None:
    # not the shared `admin`: one API knows two tokens, and only the user's calls
    _, admin_entry = static_token("ops", admin=True)
    user_token, user_entry = static_token("alice")
    api = make_api(anonymous=False, auth=AuthSettings(static_tokens=(admin_entry, user_entry)))
    user = Bearer(api, user_token)
    body = {"state": "disabled", "reason": "x"}
    tape = user.api.request("PUT", f"{ADMIN}/tapes/T00001/state", json=body, headers=user.headers)
    assert_problem(tape, 403)
    drive = api.request("PUT", f"{ADMIN}/drives/drive00/state", json={"state": "down", "reason": "x"})
    assert_problem(drive, 401)
    assert_problem(user.get(f"{ADMIN}/tapes"), 403)
    assert counts(session_factory) == (0, 0, 0)


def test_capacity_and_the_outlook_follow_a_drive_taken_down(
    make_api: Callable[..., SyncApi],
    library: SimulatedAdapter,
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    # cta holds young work back: nothing is handed over, and the outlook projects the mounts to come
    admin = admin_on(make_api, policy="cta")
    catalogue = library.library.catalogue
    request_id = submit(admin, [catalogue.on_tape(tape)[0].path for tape in catalogue.tapes[:3]])
    before = admin.get(f"/api/native/v1/requests/{request_id}").json()["outlook"]

    assert (
        set_drive(admin, "drive01", {"state": "down", "mode": "now", "reason": "service"}).status_code == 200
    )
    cycle = Cycle(Settings(policy="cta"), session_factory, library, build_policy("cta"), clock)
    report = cycle.run_once()
    assert report.files_submitted == 0 and report.media is not None
    assert report.media.drive_changes == ["drive01 down_now"]
    assert library.capacity().drives_total == 1
    clock.advance(11)  # past the shared projection's refresh
    after = admin.get(f"/api/native/v1/requests/{request_id}").json()["outlook"]
    # three tapes on one drive instead of two: the last is read later
    assert datetime.fromisoformat(after["eta"]) > datetime.fromisoformat(before["eta"])
    again = cycle.run_once().media
    assert again is not None and again.drive_changes == []  # handed over once, not at every cycle
