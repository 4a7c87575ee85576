"""Registering webhooks through the native API, on both databases: at submit or on an existing request,
listed and removed by the request's owner only; a URL the settings do not allow is refused with 400 naming
the field, and nothing is stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.config.auth import AuthSettings
from carousel.db.models import RequestWebhook, WebhookDelivery
from tests.integration.api.conftest import Bearer, RowCounts, SyncApi, assert_problem
from tests.tokens import static_token

NATIVE = "/api/native/v1"
ALLOW: dict[str, Any] = {"allowed_hosts": ["127.0.0.1", "*.example.org"]}
HOOK = "https://hooks.example.org/carousel"
SECRET = "s3cret-s3cret-s3cret"


@pytest.fixture
def hooks_api(make_api: Callable[..., SyncApi]) -> SyncApi:
    return make_api(webhooks=ALLOW)


def count(factory: sessionmaker[Session], table: type[RequestWebhook] | type[WebhookDelivery]) -> int:
    with factory() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def submit(api: SyncApi, paths: list[str], **extra: Any) -> dict[str, Any]:
    response = api.post(f"{NATIVE}/requests", json={"paths": paths, **extra})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_webhook_given_at_submit_is_listed_without_its_secret(
    hooks_api: SyncApi, library_paths: list[str]
) -> None:
    body = submit(hooks_api, library_paths[:2], webhook={"url": HOOK, "secret": SECRET})
    listed = hooks_api.get(f"{NATIVE}/requests/{body['id']}/webhooks")
    assert listed.status_code == 200
    (hook,) = listed.json()["webhooks"]
    assert (hook["id"], hook["url"], hook["signed"], hook["delivery"]) == (
        body["webhook_id"],
        HOOK,
        True,
        None,
    )
    assert SECRET not in listed.text


def test_register_list_and_remove_on_an_existing_request(
    hooks_api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = submit(hooks_api, library_paths[:2])["id"]
    assert submit(hooks_api, library_paths[2:3])["webhook_id"] is None
    urls = [HOOK, "http://127.0.0.1:9/other"]
    ids = []
    for url in urls:
        response = hooks_api.post(f"{NATIVE}/requests/{request_id}/webhooks", json={"url": url})
        assert response.status_code == 201, response.text
        assert response.json()["signed"] is False
        ids.append(response.json()["id"])
        assert response.headers["location"].endswith(f"/requests/{request_id}/webhooks/{ids[-1]}")
    listed = hooks_api.get(f"{NATIVE}/requests/{request_id}/webhooks").json()["webhooks"]
    assert sorted(h["url"] for h in listed) == sorted(urls)

    assert hooks_api.delete(f"{NATIVE}/requests/{request_id}/webhooks/{ids[0]}").status_code == 204
    listed = hooks_api.get(f"{NATIVE}/requests/{request_id}/webhooks").json()["webhooks"]
    assert [h["id"] for h in listed] == ids[1:]
    assert_problem(
        hooks_api.delete(f"{NATIVE}/requests/{request_id}/webhooks/{ids[0]}"), 404, field="webhook_id"
    )
    assert count(session_factory, RequestWebhook) == 1


REFUSED = [
    ("ftp://hooks.example.org/x", "the scheme must be http or https"),
    ("file:///etc/passwd", "the scheme must be http or https"),
    ("https://evil.example.com/x", "'evil.example.com' is not among the hosts"),
    ("https://hooks.example.org.evil.test/x", "is not among the hosts"),
    ("https://user:pw@hooks.example.org/x", "no user name or password"),
    ("https://hooks.example.org:99999/x", "not a valid URL"),
    ("https://hooks.example.org/x#part", "a fragment"),
    ("https:///x", "names no host"),
    ("https://hooks.example.org/a b", "printable ASCII"),
    ("https://hooks.example.org/" + "a" * 2100, "the limit is 2048"),
]


@pytest.mark.parametrize(("url", "says"), REFUSED)
def test_a_url_not_allowed_is_refused_at_submit_naming_the_field_and_nothing_is_stored(
    hooks_api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts], url: str, says: str
) -> None:
    before = row_counts()
    response = hooks_api.post(
        f"{NATIVE}/requests", json={"paths": library_paths[:2], "webhook": {"url": url}}
    )
    assert_problem(response, 400, field="webhook.url", says=says)
    assert row_counts() == before  # no request either


@pytest.mark.parametrize(("url", "says"), REFUSED[:5])
def test_a_url_not_allowed_is_refused_on_a_request(
    hooks_api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session], url: str, says: str
) -> None:
    request_id = submit(hooks_api, library_paths[:1])["id"]
    response = hooks_api.post(f"{NATIVE}/requests/{request_id}/webhooks", json={"url": url})
    assert_problem(response, 400, field="url", says=says)
    assert count(session_factory, RequestWebhook) == 0


def test_webhooks_are_refused_until_an_operator_allows_hosts(
    api: SyncApi, library_paths: list[str], row_counts: Callable[[], RowCounts]
) -> None:
    before = row_counts()
    response = api.post(f"{NATIVE}/requests", json={"paths": library_paths[:1], "webhook": {"url": HOOK}})
    assert_problem(response, 400, field="webhook.url", says="webhooks.allowed_hosts")
    assert "not enabled" in response.json()["detail"]
    assert row_counts() == before


PRINTABLE = "16 to 256 printable ASCII characters"


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("short", PRINTABLE),
        ("x" * 257, PRINTABLE),
        ("nul\x00" * 4, PRINTABLE),
        ("é" * 20, PRINTABLE),
        ("lone\udc80" * 4, ""),  # refused by the body's parser already
    ],
)
def test_a_secret_not_16_to_256_printable_ascii_characters_is_refused(
    hooks_api: SyncApi,
    library_paths: list[str],
    row_counts: Callable[[], RowCounts],
    secret: str,
    says: str,
) -> None:
    before = row_counts()
    body = json.dumps({"paths": library_paths[:1], "webhook": {"url": HOOK, "secret": secret}})
    response = hooks_api.post(
        f"{NATIVE}/requests", content=body, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400, field="webhook.secret", says=says)
    assert row_counts() == before


@pytest.mark.parametrize("webhook_id", ["nope", "\x00", "'; drop table x"])
def test_a_webhook_id_that_is_no_id_is_not_found(
    hooks_api: SyncApi, library_paths: list[str], webhook_id: str
) -> None:
    request_id = submit(hooks_api, library_paths[:1])["id"]
    response = hooks_api.delete(f"{NATIVE}/requests/{request_id}/webhooks/{quote(webhook_id)}")
    assert_problem(response, 404, field="webhook_id")


def test_webhooks_per_request_are_limited_and_a_url_is_registered_once(
    make_api: Callable[..., SyncApi], library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    api = make_api(webhooks={**ALLOW, "max_per_request": 2})
    request_id = submit(api, library_paths[:1], webhook={"url": HOOK})["id"]
    route = f"{NATIVE}/requests/{request_id}/webhooks"
    assert_problem(api.post(route, json={"url": HOOK}), 409, field="url", says="already has a webhook")
    assert api.post(route, json={"url": HOOK + "/2"}).status_code == 201
    assert_problem(
        api.post(route, json={"url": HOOK + "/3"}), 400, field="url", says="webhooks.max_per_request"
    )
    assert count(session_factory, RequestWebhook) == 2


def test_another_callers_request_is_not_found(
    make_api: Callable[..., SyncApi], library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    alice_token, alice = static_token("alice")
    bob_token, bob = static_token("bob")
    api = make_api(webhooks=ALLOW, anonymous=False, auth=AuthSettings(static_tokens=(alice, bob)))
    as_alice, as_bob = Bearer(api, alice_token), Bearer(api, bob_token)
    response = as_alice.post(
        f"{NATIVE}/requests", json={"paths": library_paths[:1], "webhook": {"url": HOOK}}
    )
    assert response.status_code == 201, response.text
    request_id, webhook_id = response.json()["id"], response.json()["webhook_id"]
    route = f"{NATIVE}/requests/{request_id}/webhooks"

    assert_problem(as_bob.post(route, json={"url": HOOK + "/bob"}), 404)
    assert_problem(as_bob.get(route), 404)
    assert_problem(as_bob.delete(f"{route}/{webhook_id}"), 404)
    assert count(session_factory, RequestWebhook) == 1
    assert [h["id"] for h in as_alice.get(route).json()["webhooks"]] == [webhook_id]


def test_a_webhook_on_a_request_already_done_is_told_at_once(
    hooks_api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = submit(hooks_api, library_paths[:3])["id"]
    assert hooks_api.post(f"{NATIVE}/requests/{request_id}/cancel").status_code == 200
    assert count(session_factory, WebhookDelivery) == 0  # no webhook when it ended

    response = hooks_api.post(f"{NATIVE}/requests/{request_id}/webhooks", json={"url": HOOK})
    assert response.status_code == 201, response.text
    delivery = response.json()["delivery"]
    assert (delivery["state"], delivery["attempts"]) == ("PENDING", 0)
    with session_factory() as session:
        payload = session.scalars(select(WebhookDelivery.payload)).one()
    request = hooks_api.get(f"{NATIVE}/requests/{request_id}").json()["request"]
    assert payload == {
        "event": "request.done",
        "delivery_id": delivery["id"],
        "webhook_id": response.json()["id"],
        "request_id": request_id,
        "state": "DONE",
        "files_total": 3,
        "counts": {"COMPLETED": 0, "FAILED": 0, "CANCELLED": 3},
        "finished_at": request["completed_at"],
    }


def test_cancelling_a_request_with_a_webhook_writes_its_delivery_in_the_same_transaction(
    hooks_api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    request_id = submit(hooks_api, library_paths[:2], webhook={"url": HOOK})["id"]
    assert count(session_factory, WebhookDelivery) == 0
    assert (
        hooks_api.post(
            f"{NATIVE}/requests/{request_id}/cancel", json={"paths": library_paths[:1]}
        ).status_code
        == 200
    )
    assert count(session_factory, WebhookDelivery) == 0  # one file still pending: not done
    assert hooks_api.post(f"{NATIVE}/requests/{request_id}/cancel").status_code == 200
    (hook,) = hooks_api.get(f"{NATIVE}/requests/{request_id}/webhooks").json()["webhooks"]
    assert hook["delivery"]["state"] == "PENDING"
    assert count(session_factory, WebhookDelivery) == 1
