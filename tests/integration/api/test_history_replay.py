"""Replay of the recorded requests under a candidate policy, through the admin API: requests submitted over
HTTP, the scheduler stepped on the virtual clock against the simulated library until they are on disk, then
the window replayed. The recorded figures agree with the rows they come from, the active policy's replay
reproduces what happened on the same library, and bad input is refused naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.config.auth import AuthSettings
from carousel.db.models import Mount, Recall, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter
from policies.registry import build_policy
from tests.integration.api.conftest import LIBRARY_OPTIONS, Bearer, SyncApi, assert_problem
from tests.integration.scheduler.rows import add_request, queued
from tests.tokens import static_token

REPLAY = "/api/admin/v1/policy/replay"
INTERVAL_S = 2.0


class Site:
    """The API with an admin and a user, and the scheduler stepped in virtual time on the same library."""

    def __init__(
        self,
        make_api: Callable[..., SyncApi],
        library: SimulatedAdapter,
        clock: ManualClock,
        factory: sessionmaker[Session],
        **settings: Any,
    ) -> None:
        admin_token, admin_entry = static_token("ops", admin=True)
        user_token, user_entry = static_token("alice", groups=("atlas",))
        values: dict[str, Any] = {
            "anonymous": False,
            "auth": AuthSettings(static_tokens=(admin_entry, user_entry)),
            "adapter_options": LIBRARY_OPTIONS,
            "cycle_interval_s": INTERVAL_S,
            "policy": "fifo",  # what the recorded history ran, the active policy the replays start from
            **settings,
        }
        api = make_api(**values)
        self.admin = Bearer(api, admin_token)
        self.user = Bearer(api, user_token)
        self.clock = clock
        self.factory = factory
        limits = values.pop("limits", None)
        del limits
        self.cycle = Cycle(Settings(**values), factory, library, build_policy(values["policy"]), clock)

    def submit(self, paths: list[str], *, priority: int = 0) -> str:
        response = self.user.post("/api/native/v1/requests", json={"paths": paths, "priority": priority})
        assert response.status_code == 201, response.text
        request_id: str = response.json()["id"]
        return request_id

    def step(self, ticks: int = 1) -> None:
        for _ in range(ticks):
            self.cycle.run_once()
            self.clock.advance(INTERVAL_S)

    def run_until_done(self) -> None:
        for _ in range(5_000):
            self.step()
            with self.factory() as session:
                pending = session.scalar(
                    select(func.count()).select_from(RequestFile).where(RequestFile.state == "PENDING")
                )
            if not pending:
                self.step(50)  # the last unmounts
                return
        raise AssertionError("the service did not finish the requests")

    def replay(self, **body: Any) -> Any:
        response = self.admin.post(REPLAY, json=body)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture
def site(
    make_api: Callable[..., SyncApi],
    library: SimulatedAdapter,
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> Site:
    return Site(make_api, library, clock, session_factory)


def recorded_latencies(factory: sessionmaker[Session]) -> list[float]:
    with factory() as session:
        rows = session.execute(
            select(StageRequest.created_at, RequestFile.finished_at).join(
                RequestFile, RequestFile.request_id == StageRequest.id
            )
        ).all()
    return [(finished - created).total_seconds() for created, finished in rows]


def count(factory: sessionmaker[Session], what: Any) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(what)) or 0)


def a_day_of_requests(site: Site, paths: list[str]) -> list[str]:
    """Three requests over a minute, the last asking again for a file of the first."""
    ids = [site.submit(paths[0:40:4], priority=1)]
    site.step(10)
    ids.append(site.submit(paths[1:60:6]))
    site.step(10)
    ids.append(site.submit([paths[0], *paths[2:80:8]], priority=5))
    site.run_until_done()
    return ids


def test_the_replay_under_the_active_policy_reproduces_what_happened(
    site: Site, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    a_day_of_requests(site, library_paths)
    links = count(session_factory, RequestFile)

    body = site.replay()

    recorded, active, candidate = body["recorded"], body["under_active"], body["under_candidate"]
    assert body["requests"] == 3
    assert body["skipped"] == {"cancelled": 0, "tape_unknown": 0, "not_read": 0}
    assert (body["profile"], body["drives"], body["time_scale"]) == ("lto8", 2, 100.0)
    # what happened, recomputed from the rows
    assert recorded["files"] == recorded["staged"] == links
    assert recorded["waiting"] == recorded["failed"] == 0
    assert recorded["mounts"] == count(session_factory, Mount) > 0
    assert recorded["reads"] == count(session_factory, Recall) == links - 1  # one file asked for twice
    latencies = recorded_latencies(session_factory)
    assert recorded["latency"]["count"] == len(latencies)
    assert recorded["latency"]["p50_s"] == pytest.approx(float(np.percentile(latencies, 50)), abs=1e-3)
    assert recorded["latency"]["p99_s"] == pytest.approx(float(np.percentile(latencies, 99)), abs=1e-3)
    # the same policy on the same library, replayed: the same work, the same mounts, the same waits
    assert active["policy"] == candidate["policy"] == "fifo"
    assert active == candidate
    assert (active["files"], active["staged"], active["reads"], active["bytes"]) == (
        recorded["files"],
        recorded["staged"],
        recorded["reads"],
        recorded["bytes"],
    )
    assert active["mounts"] == recorded["mounts"]
    for key in ("p50_s", "p95_s", "p99_s"):
        assert active["latency"][key] == pytest.approx(recorded["latency"][key], abs=2 * INTERVAL_S)
    assert active["makespan_s"] == pytest.approx(recorded["makespan_s"], abs=2 * INTERVAL_S)


def test_a_candidate_policy_is_replayed_beside_the_active_one(site: Site, library_paths: list[str]) -> None:
    a_day_of_requests(site, library_paths)

    # CTA's thresholds: no mount before the oldest request is two minutes old (clock seconds, as in the
    # service: the library runs a hundred times faster, the policy's ages do not)
    options = {"min_age_s": 120, "min_files": 1000}
    body = site.replay(policy="cta", options=options)

    assert body["candidate"] == {"policy": "cta", "options": options}
    assert body["active"] == {"policy": "fifo", "options": {}}
    candidate, active = body["under_candidate"], body["under_active"]
    assert candidate["policy"] == "cta" and active["policy"] == "fifo"
    assert candidate["files"] == active["files"] == candidate["staged"] == active["staged"]
    # the first request waited out the age; files arriving later found their tape eligible already
    assert active["latency"]["p99_s"] < 120 <= candidate["latency"]["p95_s"]
    # CTA's mount gathers everything that waited for the tape: fewer mounts, more files each
    assert candidate["mounts"] < active["mounts"]
    assert candidate["files_per_mount"] > active["files_per_mount"]


def test_the_window_takes_only_its_requests_and_counts_what_it_leaves_out(
    site: Site, library_paths: list[str], clock: ManualClock
) -> None:
    a_day_of_requests(site, library_paths)
    clock.advance(30 * 3600)
    later = site.submit(library_paths[0:20:4])  # on disk already: answered without a read
    site.step(3)
    cancelled = site.submit(library_paths[100:103])
    response = site.user.post(f"/api/native/v1/requests/{cancelled}/cancel")
    assert response.status_code == 200, response.text

    body = site.replay(hours=1)

    assert later and body["requests"] == 2
    assert body["skipped"] == {"cancelled": 3, "tape_unknown": 0, "not_read": 5}
    assert body["recorded"]["files"] == body["under_active"]["files"] == 0
    assert body["note"] == "no file of the window needed a read: nothing to replay"
    # two days hold the reads too: the second asks are replayed, answered from disk as they were
    both = site.replay(hours=48)
    assert both["recorded"]["files"] == both["under_active"]["staged"] == count(site.factory, RequestFile) - 3
    assert both["recorded"]["reads"] == both["under_active"]["reads"] == count(site.factory, Recall)


def test_a_policy_change_in_the_window_is_named(site: Site, library_paths: list[str]) -> None:
    a_day_of_requests(site, library_paths)
    change = {"policy": "cta", "reason": "try CTA's thresholds"}
    response = site.admin.api.request("PUT", "/api/admin/v1/policy", json=change, headers=site.admin.headers)
    assert response.status_code == 200, response.text

    body = site.replay()

    assert [(c["old_policy"], c["policy"], c["who"]) for c in body["policy_changes"]] == [
        ("fifo", "cta", "ops")
    ]
    assert body["recorded"]["policy"] == "fifo, then cta"
    assert body["active"]["policy"] == "cta"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"policy": "lottery"}, "policy"),
        ({"policy": "cta", "options": {"min_age_s": -1}}, "options.min_age_s"),
        ({"hours": 0}, "hours"),
        ({"hours": 24 * 7 + 1}, "hours"),
        ({"drives": 0}, "drives"),
        ({"profile": "lto99"}, "profile"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_refused_naming_the_field(site: Site, body: dict[str, Any], field: str) -> None:
    assert_problem(site.admin.post(REPLAY, json=body), 400, field=field)


def test_only_admins_replay(site: Site) -> None:
    assert_problem(site.user.post(REPLAY, json={}), 403)


def test_a_window_over_the_limit_is_refused(
    make_api: Callable[..., SyncApi],
    library: SimulatedAdapter,
    clock: ManualClock,
    session_factory: sessionmaker[Session],
    library_paths: list[str],
) -> None:
    site = Site(make_api, library, clock, session_factory, limits={"max_replay_files": 5})
    site.submit(library_paths[:6])
    assert_problem(site.admin.post(REPLAY, json={}), 400, field="hours", says="max_replay_files = 5")


def test_another_adapter_needs_the_library_named(
    make_api: Callable[..., SyncApi],
    library: SimulatedAdapter,
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    site = Site(make_api, library, clock, session_factory, adapter="command", adapter_options={})
    assert_problem(site.admin.post(REPLAY, json={}), 400, field="profile")
    assert_problem(site.admin.post(REPLAY, json={"profile": "lto8"}), 400, field="drives")
    body = site.replay(profile="lto8", drives=3)
    assert body["library"] == "3 lto8 drives, each policy's own library setup"


def test_recorded_positions_the_profile_cannot_hold_are_refused_naming_the_profile(
    site: Site, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    # two files recorded at the same place of one tape (a back-end reporting file numbers, not bytes)
    at = clock.now()
    files = [queued(f"/odd/{n}", "ODD1", 7, at, size=10**9) for n in range(2)]
    add_request(session_factory, files, at)
    with session_factory.begin() as session:
        for file in files:
            session.add(Recall(file_id=file.id, batch_key="b", tape="ODD1", submitted_at=at, bytes=10**9))
    site.step(1)
    assert_problem(site.admin.post(REPLAY, json={}), 400, field="profile", says="do not fit")
