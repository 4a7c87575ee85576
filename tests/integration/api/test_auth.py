"""Authentication and authorization through the API: bearer tokens (JWT and static), X.509 subjects from a
trusted proxy, 401 vs 403 vs 404, group sharing, the admin role, and back-pressure (429 with Retry-After).
Tokens are signed with keys made here and judged on the tests' virtual clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.auth import AdminCaller
from carousel.config.auth import AuthSettings, StaticToken, X509ProxySettings, X509Subject
from carousel.db.models import RequestFile
from carousel.domain.clock import ManualClock
from tests.integration.api.conftest import BASE_URL, Bearer, RowCounts, SyncApi, assert_problem
from tests.tokens import Issuer, static_token

STAGE = "/api/v1/stage"
NATIVE = "/api/native/v1"
DISCOVERY = "/.well-known/wlcg-tape-rest-api"


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def auth(issuer: Issuer, tmp_path: Path) -> AuthSettings:
    return AuthSettings(
        issuers=(
            issuer.settings(
                issuer.write_pem(tmp_path),
                admin_groups=("/star/admins",),
                group_access=("/star/production",),
            ),
        )
    )


@pytest.fixture
def secured(
    make_app: Callable[..., FastAPI], make_api: Callable[..., SyncApi], auth: AuthSettings
) -> SyncApi:
    return make_api(anonymous=False, auth=auth)


def as_(api: SyncApi, issuer: Issuer, clock: ManualClock, **claims: Any) -> Bearer:
    return Bearer(api, issuer.mint(clock.now(), **claims))


# --- 401: no credentials, bad credentials -------------------------------------------------------------


def test_without_a_token_every_api_call_is_401_and_discovery_and_health_stay_open(secured: SyncApi) -> None:
    for method, url in (("POST", STAGE), ("GET", f"{NATIVE}/requests"), ("POST", "/api/v1/archiveinfo")):
        response = secured.request(method, url, json={"files": [], "paths": []})
        assert_problem(response, 401)
        assert response.headers["www-authenticate"] == 'Bearer realm="carousel"'
    assert secured.get(DISCOVERY).status_code == 200
    assert secured.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("make_token", "says"),
    [
        (lambda issuer, now: Issuer().mint(now), "signature"),
        (lambda issuer, now: issuer.mint(now, lifetime_s=-1), "expired"),
        (
            lambda issuer, now: issuer.mint(now, audience="https://elsewhere.test"),
            "not meant for this service",
        ),
        (lambda issuer, now: issuer.mint(now, issuer="https://evil.test"), "not trusted"),
        (lambda issuer, now: issuer.mint(now, scope="storage.stage"), "has no path"),
        (lambda issuer, now: "an-unknown-static-token", "not one this service knows"),
    ],
    ids=["forged", "expired", "wrong-audience", "wrong-issuer", "scope-without-path", "unknown"],
)
def test_a_bad_token_is_401_invalid_token_and_writes_nothing(
    secured: SyncApi,
    issuer: Issuer,
    clock: ManualClock,
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
    make_token: Callable[[Issuer, Any], str],
    says: str,
) -> None:
    before = row_counts()
    caller = Bearer(secured, make_token(issuer, clock.now()))
    response = caller.post(STAGE, json={"files": [{"path": library_paths[0]}]})
    assert_problem(response, 401, says=says)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert row_counts() == before


def test_a_token_sent_is_judged_even_when_anonymous_calls_are_allowed(
    make_api: Callable[..., SyncApi], auth: AuthSettings, issuer: Issuer, clock: ManualClock
) -> None:
    api = make_api(anonymous=True, auth=auth)
    expired = Bearer(api, issuer.mint(clock.now(), lifetime_s=60))
    clock.advance(61)
    assert_problem(expired.get(f"{NATIVE}/requests"), 401, says="expired")
    assert api.get(f"{NATIVE}/requests").status_code == 200  # without a token: the anonymous caller


def test_a_token_expires_while_in_use(secured: SyncApi, issuer: Issuer, clock: ManualClock) -> None:
    caller = as_(secured, issuer, clock, lifetime_s=300)
    assert caller.get(f"{NATIVE}/requests").status_code == 200
    clock.advance(300)
    assert_problem(caller.get(f"{NATIVE}/requests"), 401, says="expired")


# --- 403: a valid token that does not allow it ----------------------------------------------------------


def test_stage_is_held_to_the_stage_scopes(
    secured: SyncApi,
    issuer: Issuer,
    clock: ManualClock,
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
) -> None:
    inside = [p for p in library_paths if p.startswith("/star/scaler/")][:2]
    outside = [p for p in library_paths if not p.startswith("/star/scaler/")][:1]
    caller = as_(secured, issuer, clock, scope="storage.stage:/star/scaler")
    caller.stage(inside)
    caller.stage(["//star/scaler/./" + inside[0].removeprefix("/star/scaler/")])  # normalised first: inside
    before = row_counts()
    response = caller.post(STAGE, json={"files": [{"path": inside[1]}, {"path": outside[0]}]})
    assert_problem(response, 403, field="files", says=outside[0])
    assert_problem(
        caller.post(STAGE, json={"files": [{"path": "/star/scalers/x.root"}]}), 403
    )  # not a prefix
    trick = caller.post(STAGE, json={"files": [{"path": "/star/scaler/../daq/x.root"}]})
    assert_problem(trick, 400, says="'..'")
    assert row_counts() == before  # refused requests wrote nothing


def test_a_read_only_token_may_ask_but_not_stage_cancel_or_release(
    secured: SyncApi, issuer: Issuer, clock: ManualClock, library_paths: list[str]
) -> None:
    owner = as_(secured, issuer, clock, sub="alice", scope="storage.stage:/")
    request_id = owner.stage(library_paths[:2])
    reader = as_(secured, issuer, clock, sub="alice", scope="storage.read:/star/scaler")
    assert_problem(reader.post(STAGE, json={"files": [{"path": library_paths[0]}]}), 403)
    assert reader.get(f"{STAGE}/{request_id}").status_code == 200  # its own request: status is a read
    body = {"paths": library_paths[:1]}
    assert_problem(reader.post(f"{STAGE}/{request_id}/cancel", json=body), 403, says="storage.stage")
    assert_problem(reader.post(f"/api/v1/release/{request_id}", json=body), 403, says="storage.stage")
    assert_problem(reader.delete(f"{STAGE}/{request_id}"), 403)
    scaler = next(p for p in library_paths if p.startswith("/star/scaler/"))
    answer = reader.post("/api/v1/archiveinfo", json={"paths": [scaler, library_paths[0]]}).json()
    assert "locality" in answer[0]
    assert answer[1]["path"] == library_paths[0]
    assert answer[1]["error"].startswith("forbidden")


def test_a_token_without_capabilities_is_judged_on_its_groups(
    secured: SyncApi, issuer: Issuer, clock: ManualClock, library_paths: list[str]
) -> None:
    production = as_(secured, issuer, clock, scope=None, groups=["/star", "/star/production"])
    production.stage(library_paths[:1])
    member = as_(secured, issuer, clock, scope=None, groups=["/star"])
    assert_problem(member.post(STAGE, json={"files": [{"path": library_paths[0]}]}), 403)
    assert_problem(member.get(f"{NATIVE}/requests"), 403)


def test_a_native_request_names_one_of_the_callers_groups(
    secured: SyncApi, issuer: Issuer, clock: ManualClock, library_paths: list[str]
) -> None:
    caller = as_(secured, issuer, clock, groups=["/star", "/star/production"])
    response = caller.post(
        f"{NATIVE}/requests", json={"paths": library_paths[:1], "group": "/star/production"}
    )
    assert response.status_code == 201, response.text
    assert (
        caller.get(f"{NATIVE}/requests/{response.json()['id']}").json()["request"]["group"]
        == "/star/production"
    )
    plain = caller.post(f"{NATIVE}/requests", json={"paths": library_paths[:1]})
    assert caller.get(f"{NATIVE}/requests/{plain.json()['id']}").json()["request"]["group"] == "/star"
    other = caller.post(f"{NATIVE}/requests", json={"paths": library_paths[:1], "group": "/atlas"})
    assert_problem(other, 403, field="group")


# --- 404: another tenant's request ----------------------------------------------------------------------


def test_another_callers_request_is_not_found_exactly_like_an_unknown_one(
    secured: SyncApi,
    issuer: Issuer,
    clock: ManualClock,
    library_paths: list[str],
    session_factory: sessionmaker[Session],
) -> None:
    alice = as_(secured, issuer, clock, sub="alice")
    mallory = as_(secured, issuer, clock, sub="mallory")
    theirs = alice.stage(library_paths[:2])
    unknown = str(uuid.uuid4())
    body = {"paths": library_paths[:1]}
    for request_id in (theirs, unknown):
        answers = [
            mallory.get(f"{STAGE}/{request_id}"),
            mallory.post(f"{STAGE}/{request_id}/cancel", json=body),
            mallory.delete(f"{STAGE}/{request_id}"),
            mallory.get(f"{NATIVE}/requests/{request_id}"),
            mallory.get(f"{NATIVE}/requests/{request_id}/files"),
            mallory.post(f"{NATIVE}/requests/{request_id}/cancel"),
            mallory.post(f"{NATIVE}/requests/{request_id}/release"),
            mallory.delete(f"{NATIVE}/requests/{request_id}"),
        ]
        for response in answers:
            assert_problem(response, 404)
            assert response.json()["detail"] == f"no request {request_id!r}"
    # Release with another's id is "release my copies of these paths": mallory has none, so nothing moves.
    assert mallory.post(f"/api/v1/release/{theirs}", json=body).status_code == 200
    assert mallory.get(f"{NATIVE}/requests").json()["requests"] == []
    with session_factory() as session:
        links = session.scalars(select(RequestFile).where(RequestFile.request_id == theirs)).all()
        assert [(link.state, link.released_at) for link in links] == [("PENDING", None)] * 2
    assert alice.get(f"{STAGE}/{theirs}").status_code == 200


def test_a_token_that_shares_its_groups_sees_the_groups_requests(
    secured: SyncApi, issuer: Issuer, clock: ManualClock, library_paths: list[str]
) -> None:
    sharing = "storage.stage:/ carousel.group"
    alice = as_(secured, issuer, clock, sub="alice", groups=["/star"], scope=sharing)
    request_id = alice.stage(library_paths[:2])
    carol = as_(secured, issuer, clock, sub="carol", groups=["/star"], scope=sharing)
    dave = as_(secured, issuer, clock, sub="dave", groups=["/star"])  # in the group, token does not share
    erin = as_(secured, issuer, clock, sub="erin", groups=["/atlas"], scope=sharing)
    assert carol.get(f"{STAGE}/{request_id}").status_code == 200
    assert [r["id"] for r in carol.get(f"{NATIVE}/requests").json()["requests"]] == [request_id]
    assert carol.post(f"{STAGE}/{request_id}/cancel", json={"paths": library_paths[:1]}).status_code == 200
    assert_problem(dave.get(f"{STAGE}/{request_id}"), 404)
    assert_problem(erin.get(f"{STAGE}/{request_id}"), 404)
    states = {f["path"]: f["state"] for f in alice.get(f"{STAGE}/{request_id}").json()["files"]}
    assert states == {library_paths[0]: "CANCELLED", library_paths[1]: "SUBMITTED"}


# --- the admin role -------------------------------------------------------------------------------------


def _with_admin_route(app: FastAPI) -> FastAPI:
    @app.get("/api/admin/probe")
    def probe(caller: AdminCaller) -> dict[str, str]:
        return {"admin": caller.name}

    return app


def test_admin_endpoints_need_the_admin_role(
    make_app: Callable[..., FastAPI],
    portal: Any,
    auth: AuthSettings,
    issuer: Issuer,
    clock: ManualClock,
) -> None:
    app = _with_admin_route(make_app(anonymous=True, auth=auth))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)
    api = SyncApi(portal, client)
    try:
        admin = as_(api, issuer, clock, sub="root", groups=["/star", "/star/admins"])
        assert admin.get("/api/admin/probe").json() == {"admin": "star:root"}
        user = as_(api, issuer, clock, sub="alice", groups=["/star"])
        refused = user.get("/api/admin/probe")
        assert_problem(refused, 403, says="admin role")
        assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
        assert_problem(api.get("/api/admin/probe"), 401)  # the anonymous caller: credentials would help
    finally:
        portal.call(client.aclose)


# --- static tokens and X.509 subjects -------------------------------------------------------------------


def test_static_tokens(make_api: Callable[..., SyncApi], library_paths: list[str]) -> None:
    token, entry = static_token("robot", groups=("/star",), scopes=("storage.stage:/star/scaler",))
    api = make_api(anonymous=False, auth=AuthSettings(static_tokens=(entry,)))
    robot = Bearer(api, token)
    scaler = next(p for p in library_paths if p.startswith("/star/scaler/"))
    request_id = robot.stage([scaler])
    assert robot.get(f"{NATIVE}/requests/{request_id}").json()["request"]["owner"] == "robot"
    assert_problem(robot.post(STAGE, json={"files": [{"path": library_paths[0]}]}), 403)
    assert_problem(Bearer(api, token + "x").get(f"{NATIVE}/requests"), 401)


def test_settings_hold_only_the_tokens_digest() -> None:
    token, entry = static_token("robot")
    assert token not in entry.model_dump_json()
    with pytest.raises(ValueError, match="anonymous"):
        StaticToken(name="anonymous", sha256="0" * 64)


SUBJECT = "/DC=org/DC=example/OU=People/CN=Alice Example"


def _x509(proxies: tuple[str, ...]) -> AuthSettings:
    subject = X509Subject(subject=SUBJECT, name="alice-x509", groups=("/star",))
    return AuthSettings(x509=X509ProxySettings(trusted_proxies=proxies, subjects=(subject,)))  # type: ignore[arg-type]


def test_x509_subjects_are_believed_only_from_trusted_proxies(make_api: Callable[..., SyncApi]) -> None:
    # httpx's ASGI transport calls from 127.0.0.1.
    headers = {"X-SSL-Client-S-DN": SUBJECT, "X-SSL-Client-Verify": "SUCCESS"}
    trusted = make_api(anonymous=False, auth=_x509(("127.0.0.0/8",)))
    standing = trusted.get(f"{NATIVE}/limits", headers=headers).json()["caller"]
    assert standing["name"] == "alice-x509"
    failed = {**headers, "X-SSL-Client-Verify": "FAILED:certificate has expired"}
    assert_problem(trusted.get(f"{NATIVE}/limits", headers=failed), 401)
    stranger = {**headers, "X-SSL-Client-S-DN": "/CN=Somebody Else"}
    assert_problem(trusted.get(f"{NATIVE}/limits", headers=stranger), 403)
    elsewhere = make_api(anonymous=False, auth=_x509(("192.0.2.0/24",)))
    assert_problem(elsewhere.get(f"{NATIVE}/limits", headers=headers), 401)  # header ignored: no credentials


# --- back-pressure --------------------------------------------------------------------------------------


def test_the_call_rate_is_limited_per_caller_with_retry_after(
    make_api: Callable[..., SyncApi], auth: AuthSettings, issuer: Issuer, clock: ManualClock
) -> None:
    api = make_api(anonymous=False, auth=auth, quotas={"caller_calls_per_s": 0.5, "caller_burst": 3})
    alice = as_(api, issuer, clock, sub="alice")
    bob = as_(api, issuer, clock, sub="bob")
    assert [alice.get(f"{NATIVE}/requests").status_code for _ in range(3)] == [200] * 3
    refused = alice.get(f"{NATIVE}/requests")
    assert_problem(refused, 429, says="caller rate limit")
    assert refused.headers["retry-after"] == "2"
    assert bob.get(f"{NATIVE}/requests").status_code == 200  # another caller has its own bucket
    clock.advance(2)
    assert alice.get(f"{NATIVE}/requests").status_code == 200


def test_queued_files_are_capped_per_caller_and_per_group(
    make_api: Callable[..., SyncApi],
    auth: AuthSettings,
    issuer: Issuer,
    clock: ManualClock,
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
) -> None:
    quotas = {
        "max_queued_files_per_caller": 3,
        "max_queued_files_per_group": 5,
        "queue_full_retry_after_s": 30,
    }
    api = make_api(anonymous=False, auth=auth, quotas=quotas)
    alice = as_(api, issuer, clock, sub="alice", groups=["/star"])
    bob = as_(api, issuer, clock, sub="bob", groups=["/star"])
    carol = as_(api, issuer, clock, sub="carol", groups=["/star"])
    first = alice.stage(library_paths[0:2])
    before = row_counts()
    refused = alice.post(STAGE, json={"files": [{"path": p} for p in library_paths[2:4]]})
    assert_problem(refused, 429, says="quota of 3")
    assert refused.headers["retry-after"] == "30"
    assert row_counts() == before
    bob.stage(library_paths[10:13])  # the group now holds 5
    assert_problem(carol.post(STAGE, json={"files": [{"path": library_paths[20]}]}), 429, says="group")
    assert_problem(alice.post(STAGE, json={"files": [{"path": p} for p in library_paths[30:34]]}), 413)
    # Files that end free the quota.
    assert alice.post(f"{STAGE}/{first}/cancel", json={"paths": library_paths[0:2]}).status_code == 200
    alice.stage(library_paths[2:4])
    standing = alice.get(f"{NATIVE}/limits").json()
    assert standing["caller"]["queued_files"] == 2
    assert standing["caller"]["group_queued_files"] == 5
    assert standing["limits"]["max_queued_files_per_caller"] == 3


def test_limits_are_advertised_in_discovery(make_api: Callable[..., SyncApi]) -> None:
    quotas = {"max_queued_files_per_caller": 1000, "caller_calls_per_s": 20.0, "caller_burst": 40}
    metadata = make_api(quotas=quotas).get(DISCOVERY).json()["endpoints"][0]["metadata"]
    assert metadata["maxQueuedFilesPerCaller"] == 1000
    assert metadata["callerRequestsPerSecond"] == 20.0
    assert metadata["callerBurst"] == 40
    assert "maxQueuedFilesPerGroup" not in metadata  # off: not advertised
    assert metadata["maxBodyBytes"] > 0
