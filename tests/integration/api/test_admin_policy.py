"""Policy administration through the admin API: reading and changing the active policy (admins only), each
change validated by building the policy and recorded in the audit trail, a refused one changing nothing,
and a change taking effect at the next cycle of a running scheduler, without a restart."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.config.auth import AuthSettings
from carousel.db.models import PolicyAudit, PolicySettingsRow
from carousel.domain.clock import ManualClock
from carousel.policy_admin.active import ActivePolicy
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import Bearer, SyncApi, assert_problem
from tests.tokens import static_token

POLICY = "/api/admin/v1/policy"
AUDIT = "/api/admin/v1/policy/audit"


class Callers:
    def __init__(self, api: SyncApi, admin: str, user: str) -> None:
        self.api = api
        self.admin = Bearer(api, admin)
        self.user = Bearer(api, user)

    def put(self, who: Bearer, body: dict[str, Any]) -> Any:
        return who.api.request("PUT", POLICY, json=body, headers=who.headers)


@pytest.fixture
def callers(make_api: Callable[..., SyncApi]) -> Callers:
    # not the shared `admin`: one API knows two tokens, an admin's and a user's
    admin_token, admin_entry = static_token("ops", admin=True)
    user_token, user_entry = static_token("alice")
    # the settings name fifo: the policy active until an admin changes it
    api = make_api(anonymous=False, auth=AuthSettings(static_tokens=(admin_entry, user_entry)), policy="fifo")
    return Callers(api, admin_token, user_token)


def audit_rows(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(PolicyAudit)) or 0)


def test_the_settings_policy_is_active_until_a_change(callers: Callers) -> None:
    response = callers.admin.get(POLICY)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["policy"], body["options"], body["version"]) == ("fifo", {}, 0)
    assert body["changed_by"] == "settings" and body["changed_at"] is None
    assert {"fifo", "star2006", "cta", "carousel"} <= set(body["available"])


def test_only_admins_read_and_change_the_policy(callers: Callers, make_api: Callable[..., SyncApi]) -> None:
    change = {"policy": "carousel", "reason": "try it"}
    assert_problem(callers.user.get(POLICY), 403)
    assert_problem(callers.put(callers.user, change), 403)
    assert_problem(callers.api.get(POLICY), 401)
    assert_problem(callers.api.request("PUT", POLICY, json=change), 401)
    open_api = make_api()  # anonymous access on: the anonymous caller is still no admin
    assert_problem(open_api.get(AUDIT), 401)


def test_a_change_is_recorded_with_who_when_old_new_and_why(
    callers: Callers, clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    options = {"max_wait_s": 7200, "fair_share": {"weights": {"atlas": 3, "cms": 1}}}
    response = callers.put(
        callers.admin, {"policy": "carousel", "options": options, "reason": "bulk campaign"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["changed"] is True
    assert (body["active"]["policy"], body["active"]["options"], body["active"]["version"]) == (
        "carousel",
        options,
        1,
    )
    entry = body["audit"]
    assert entry["who"] == "ops" and entry["reason"] == "bulk campaign" and entry["version"] == 1
    assert entry["old"] == {"policy": "fifo", "options": {}}
    assert entry["new"] == {"policy": "carousel", "options": options}
    paths = {c["path"] for c in entry["changes"]}
    assert paths == {
        "policy",
        "policy_options.max_wait_s",
        "policy_options.fair_share",
    }

    clock.advance(60)
    options["fair_share"]["weights"]["cms"] = 2
    second = callers.put(
        callers.admin, {"policy": "carousel", "options": options, "reason": "cms catches up"}
    )
    assert second.status_code == 200, second.text
    assert [c["path"] for c in second.json()["audit"]["changes"]] == ["policy_options.fair_share.weights.cms"]

    trail = callers.admin.get(AUDIT).json()
    assert [e["reason"] for e in trail["entries"]] == ["cms catches up", "bulk campaign"]
    assert trail["entries"][0]["at"] > trail["entries"][1]["at"]
    page = callers.admin.get(AUDIT, params={"limit": 1}).json()
    assert [e["version"] for e in page["entries"]] == [2]
    older = callers.admin.get(AUDIT, params={"limit": 1, "cursor": page["next_cursor"]}).json()
    assert [e["version"] for e in older["entries"]] == [1] and older["next_cursor"] is None
    with session_factory() as session:
        row = session.get(PolicySettingsRow, 1)
        assert row is not None and row.version == 2 and row.changed_by == "ops"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"policy": "cta", "options": {"min_age_s": -1}, "reason": "x"}, "options.min_age_s"),
        (
            {"policy": "carousel", "options": {"costs": {"mount_s": "slow"}}, "reason": "x"},
            "options.costs.mount_s",
        ),
        ({"policy": "carousel", "options": {"patiense": 2}, "reason": "x"}, "options.patiense"),
        (
            {"policy": "carousel", "options": {"fair_share": {"weights": {"atlas": 0}}}, "reason": "x"},
            "options.fair_share.weights",
        ),
        (
            {"policy": "carousel", "options": {"fair_share": {"quotas": {"cms": 2}}}, "reason": "x"},
            "options.fair_share.quotas",
        ),
        ({"policy": "lottery", "reason": "x"}, "policy"),
        ({"policy": "carousel", "reason": "   "}, "reason"),
        ({"policy": "carousel"}, "reason"),
        ({"policy": "carousel", "reason": "x", "colour": "red"}, "colour"),
    ],
)
def test_a_bad_change_is_refused_naming_the_field_and_changes_nothing(
    callers: Callers, session_factory: sessionmaker[Session], body: dict[str, Any], field: str
) -> None:
    before = callers.admin.get(POLICY).json()
    assert_problem(callers.put(callers.admin, body), 400, field=field)
    assert callers.admin.get(POLICY).json() == before
    assert audit_rows(session_factory) == 0
    with session_factory() as session:
        assert session.get(PolicySettingsRow, 1) is None


def test_a_change_from_a_stale_version_is_refused(
    callers: Callers, session_factory: sessionmaker[Session]
) -> None:
    first = callers.put(callers.admin, {"policy": "cta", "reason": "one", "expected_version": 0})
    assert first.status_code == 200, first.text
    stale = callers.put(callers.admin, {"policy": "carousel", "reason": "two", "expected_version": 0})
    assert_problem(stale, 409, field="expected_version")
    assert callers.admin.get(POLICY).json()["policy"] == "cta"
    assert audit_rows(session_factory) == 1


def test_the_active_policy_again_records_nothing(
    callers: Callers, session_factory: sessionmaker[Session]
) -> None:
    response = callers.put(callers.admin, {"policy": "fifo", "options": {}, "reason": "no-op"})
    assert response.status_code == 200, response.text
    assert response.json()["changed"] is False and response.json()["audit"] is None
    assert response.json()["active"]["version"] == 0
    assert audit_rows(session_factory) == 0


def test_a_change_through_the_api_changes_the_next_cycles_plan(
    callers: Callers,
    library: SimulatedAdapter,
    library_paths: list[str],
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    """One scheduler, never restarted: fifo plans the files at once; after a change to cta (whose mount
    thresholds fresh files do not pass) the next cycle plans nothing and says why; a refused change leaves
    cta in place; a change back to fifo hands the files over at the next cycle."""
    settings = Settings(policy="fifo")
    active = ActivePolicy(settings, session_factory)
    cycle = Cycle(settings, session_factory, library, active.current(), clock, policy_source=active.current)
    assert callers.admin.post("/api/native/v1/requests", json={"paths": library_paths[:4]}).status_code == 201

    changed = callers.put(callers.admin, {"policy": "cta", "reason": "wait for full mounts"})
    assert changed.status_code == 200, changed.text
    report = cycle.run_once()
    assert report.plan is not None and report.plan.selections == ()
    assert report.claimed == 0
    tapes = {library.library.catalogue[p].tape for p in library_paths[:4]}
    assert set(report.plan.waiting) == tapes
    assert all(reason.startswith("below the mount thresholds") for reason in report.plan.waiting.values())
    assert active.version == 1

    refused = callers.put(callers.admin, {"policy": "fifo", "options": {"max_files": 0}, "reason": "oops"})
    assert_problem(refused, 400, field="options.max_files")
    clock.advance(10)
    again = cycle.run_once()
    assert again.plan is not None and again.plan.selections == () and again.claimed == 0

    back = callers.put(callers.admin, {"policy": "fifo", "reason": "back to arrival order"})
    assert back.status_code == 200, back.text
    clock.advance(10)
    after = cycle.run_once()
    assert after.plan is not None and after.plan.selections
    assert after.files_submitted == 4
    assert active.version == 2


def test_the_dashboard_shows_recent_changes(callers: Callers) -> None:
    response = callers.put(
        callers.admin,
        {"policy": "carousel", "options": {"patience": 2}, "reason": "gather more per mount"},
    )
    assert response.status_code == 200, response.text
    page = callers.admin.get("/dashboard")
    assert page.status_code == 200
    html = page.text.split('id="policy-changes"', 1)[1].split("</section>", 1)[0]
    assert "gather more per mount" in html
    assert "policy_options.patience" in html and "carousel" in html and "ops" in html
    assert "none recorded" not in html


def test_operators_pages_need_the_admin_role_once_anonymous_access_is_off(callers: Callers) -> None:
    for url in ("/dashboard", "/api/reports/library", "/api/reports"):
        assert_problem(callers.api.get(url), 401)
        assert_problem(callers.user.get(url), 403)
        assert callers.admin.get(url).status_code == 200
    assert callers.api.get("/metrics").status_code == 200  # scrapers carry no token


def test_operators_pages_stay_open_while_anonymous_access_is_on(api: SyncApi) -> None:
    assert api.get("/dashboard").status_code == 200
    assert api.get("/api/reports/library").status_code == 200


def test_a_dry_run_plans_the_live_queue_under_a_candidate_without_dispatching(
    callers: Callers, library_paths: list[str], session_factory: sessionmaker[Session], clock: ManualClock
) -> None:
    from carousel.db.models import QueuedFileRow  # noqa: PLC0415

    paths = library_paths[:40:4]  # files on several cartridges
    assert callers.admin.post("/api/native/v1/requests", json={"paths": paths}).status_code == 201

    response = callers.admin.post(f"{POLICY}/dry-run", json={"policy": "cta"})

    assert response.status_code == 200, response.text
    body = response.json()
    candidate, active = body["candidate"], body["active"]
    assert candidate["policy"]["policy"] == "cta" and active["policy"]["policy"] == "fifo"
    assert candidate["selections"] == [] and candidate["waiting_total"] == body["tapes_with_work"] > 1
    assert {w["code"] for w in candidate["waiting"]} == {"not_worth_mounting_yet"}
    assert active["selections"] and active["waiting_total"] == 0
    assert sum(p["files"] for p in active["passes"]) == len(paths)
    assert candidate["complete"] and active["complete"]
    # cta waits for its one-hour threshold; fifo reads at once
    assert candidate["drained_at"] > active["drained_at"]
    # a site of one library: its one entry is the whole answer again
    assert body["libraries"] == [
        {
            "library": "default",
            "tapes_with_work": body["tapes_with_work"],
            "candidate": candidate,
            "active": active,
        }
    ]
    first_read = datetime.fromisoformat(candidate["passes"][0]["reads_from"])
    assert first_read >= clock.now() + timedelta(hours=1)
    with session_factory() as session:
        states = set(session.scalars(select(QueuedFileRow.state)))
    assert states == {"QUEUED"}  # nothing claimed, nothing handed to the library

    bad = callers.admin.post(f"{POLICY}/dry-run", json={"policy": "cta", "options": {"min_files": 0}})
    assert_problem(bad, 400, field="options.min_files")
    assert_problem(callers.user.post(f"{POLICY}/dry-run", json={}), 403)
