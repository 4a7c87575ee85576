"""A request's outlook in the native summary (GET /api/native/v1/requests/{id}): a position, an eta in the
future and the reason its files wait while it is active; null once it is finished. The Tape REST status
stays as the standard has it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import QueuedFileRow
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from tests.integration.api.conftest import SyncApi

NATIVE = "/api/native/v1"


def _submit(api: SyncApi, paths: list[str]) -> str:
    response = api.post(f"{NATIVE}/requests", json={"paths": paths})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id


def test_a_queued_request_has_a_position_an_eta_and_a_reason(
    make_api: Callable[..., SyncApi], library_paths: list[str], clock: ManualClock
) -> None:
    # cta mounts a tape once it holds enough work or has waited an hour: a fresh request waits
    api = make_api(policy="cta")
    request_id = _submit(api, library_paths[:3])

    outlook = api.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]

    assert outlook is not None
    assert outlook["position"] == 0  # nothing else is queued
    eta = datetime.fromisoformat(outlook["eta"])
    assert eta > clock.now()
    assert datetime.fromisoformat(outlook["computed_at"]) == clock.now()
    assert outlook["reading"] == 0 and outlook["next_cycle"] == 0 and outlook["unplanned"] == 0
    assert [w["code"] for w in outlook["waiting"]] == ["not_worth_mounting_yet"]
    assert outlook["waiting"][0]["files"] == 3 and "threshold" in outlook["waiting"][0]["reason"]
    assert outlook["waiting"][0]["library"] == "default"
    # a site of one library: its one entry holds the request's own figures
    assert outlook["libraries"] == [
        {key: outlook[key] for key in ("position", "eta", "rough", "reading", "next_cycle", "unplanned")}
        | {"library": "default"}
    ]


def test_requests_behind_others_have_files_ahead_and_later_etas(
    make_api: Callable[..., SyncApi], library_paths: list[str], clock: ManualClock
) -> None:
    # fifo hands every file over at once; the library's two drives take the first two tapes, the third
    # tape waits for one of them
    api = make_api(policy="fifo")
    first = _submit(api, library_paths[:1])
    before = api.get(f"{NATIVE}/requests/{first}").json()["outlook"]
    clock.advance(1)
    second = _submit(api, library_paths[10:11])
    third = _submit(api, library_paths[20:21])
    clock.advance(1)  # they came after the shared projection was made: a read asks for a fresh one

    outlooks = [api.get(f"{NATIVE}/requests/{r}").json()["outlook"] for r in (first, second, third)]

    assert before["next_cycle"] == 1 and before["waiting"] == [] and before["position"] == 0
    assert [o["position"] for o in outlooks] == [0, 0, 2]
    assert all(o["next_cycle"] == 1 and o["unplanned"] == 0 for o in outlooks)
    # the first read was answered from the projection it was submitted under; the others from a fresh one
    made = [datetime.fromisoformat(o["computed_at"]) for o in outlooks]
    assert made[0] < made[1] == made[2] == clock.now()
    etas = [datetime.fromisoformat(o["eta"]) for o in outlooks]
    assert clock.now() < etas[1] < etas[2]


def test_a_finished_request_has_no_outlook_and_tape_rest_is_unchanged(
    api: SyncApi, library_paths: list[str]
) -> None:
    request_id = _submit(api, library_paths[:2])
    tape_rest = api.get(f"/api/v1/stage/{request_id}").json()
    assert "outlook" not in tape_rest

    assert api.post(f"{NATIVE}/requests/{request_id}/cancel").status_code == 200
    summary = api.get(f"{NATIVE}/requests/{request_id}").json()

    assert summary["request"]["state"] == "DONE"
    assert summary["outlook"] is None


def test_files_of_unknown_tape_and_retries_backing_off_are_named_and_left_out_of_the_eta(
    api: SyncApi, library_paths: list[str], clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    paths = library_paths[:3]
    request_id = _submit(api, paths)
    due = clock.now() + timedelta(minutes=10)
    with session_factory() as session, session.begin():
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path == paths[0])
            .values(state=FileState.UNRESOLVED.value, tape=None, error="the catalogue did not answer")
        )
        session.execute(
            update(QueuedFileRow)
            .where(QueuedFileRow.path == paths[1])
            .values(attempts=1, not_before=due, error="read error")
        )

    outlook = api.get(f"{NATIVE}/requests/{request_id}").json()["outlook"]

    waiting = {w["code"]: w for w in outlook["waiting"]}
    assert set(waiting) == {"tape_unknown", "retry_pending"}
    assert waiting["tape_unknown"]["files"] == 1
    assert waiting["tape_unknown"]["reason"] == "the catalogue did not answer"
    assert waiting["retry_pending"]["files"] == 1
    assert (
        datetime.fromisoformat(waiting["retry_pending"]["reason"].split("due again at ")[1].rstrip(")"))
        == due
    )
    assert outlook["unplanned"] == 2 and outlook["next_cycle"] == 1
    assert datetime.fromisoformat(outlook["eta"]) > clock.now()
