"""Issue 16, item 3: input that reached the database raised 500 (PostgreSQL refuses NUL in text, Python
cannot encode a lone surrogate, a timestamp out of range overflows). Every such value is refused at the
edge: 400 problem+json naming the field, or 401 for a token's claims; and nothing is written."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from carousel.logging import LogFormat
from tests.integration.security.conftest import LogCapture, Service, ServiceFactory, assert_problem

NUL = "\x00"
SURROGATE = "\ud800"  # sent as the JSON escape "\ud800": valid JSON, not encodable text


def _json(value: Any) -> bytes:
    """JSON as a client may send it, lone surrogates included (httpx's encoder would refuse them)."""
    return json.dumps(value).encode("ascii")


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")


REQUEST_ID = "00000000-0000-4000-8000-000000000000"

# (method, url, body, field): each must be a 400 naming the field
BAD_CALLS: list[tuple[str, str, Any, str]] = [
    *(
        ("POST", "/api/native/v1/requests", {"paths": ["/{path}"], "colocation": bad}, "colocation")
        for bad in (f"/star{NUL}", f"/star{SURROGATE}", "/star\nforged log line")
    ),
    ("POST", "/api/native/v1/requests", {"paths": ["/{path}"], "activity": f"a{NUL}"}, "activity"),
    ("POST", "/api/native/v1/requests", {"paths": ["/{path}"], "alias": f"a{NUL}"}, "alias"),
    ("POST", "/api/native/v1/requests", {"paths": ["/{path}"], "group": f"g{SURROGATE}"}, "group"),
    ("POST", "/api/native/v1/requests", {"paths": [f"/star/{SURROGATE}"]}, "paths[0]"),
    ("POST", "/api/native/v1/requests", {"paths": ["/{path}"], "priority": 10**30}, "priority"),
    (
        "POST",
        "/api/native/v1/requests",
        {"paths": ["/{path}"], "webhook": {"url": f"http://h/{NUL}"}},
        "webhook.url",
    ),
    ("POST", "/api/v1/stage", {"files": [{"path": f"/star/{NUL}"}]}, "files[0].path"),
    ("GET", "/api/native/v1/requests?cursor=" + _cursor(f"2026-01-01T00:00:00+00:00|{NUL}"), None, "cursor"),
    (
        "GET",
        "/api/native/v1/requests?cursor=" + _cursor(f"2026-01-01T00:00:00+00:00|{SURROGATE}"),
        None,
        "cursor",
    ),
    (
        "GET",
        "/api/native/v1/requests?cursor=" + _cursor(f"0001-01-01T00:00:00+01:00|{REQUEST_ID}"),
        None,
        "cursor",
    ),
    (
        "GET",
        "/api/native/v1/requests?cursor=" + _cursor(f"9999-12-31T23:59:59-01:00|{REQUEST_ID}"),
        None,
        "cursor",
    ),
    ("GET", "/api/native/v1/requests/{request}/files?cursor=%C2%B2", None, "cursor"),  # "²" is a digit
    ("GET", "/api/reports/library?since=0001-01-01T00:00:00%2B01:00", None, "since"),
    ("GET", "/api/reports/library?until=9999-12-31T23:59:59-01:00", None, "until"),
    ("GET", "/api/reports/library?until=0001-01-01T12:00:00Z", None, "until"),
]
ADMIN_CALLS: list[tuple[str, str, Any, str]] = [
    ("PUT", "/api/admin/v1/policy", {"policy": "fifo", "reason": f"why{NUL}"}, "reason"),
    ("PUT", "/api/admin/v1/policy", {"policy": "fifo", "reason": f"why{SURROGATE}"}, "reason"),
    ("PUT", "/api/admin/v1/policy", {"policy": "carousel", "options": {"a": NUL}, "reason": "r"}, "options"),
    ("PUT", "/api/admin/v1/policy", {"policy": f"fifo{NUL}", "reason": "r"}, "policy"),
    ("POST", "/api/admin/v1/policy/dry-run", {"policy": "carousel", "options": {NUL: 1}}, "options"),
    ("GET", "/api/admin/v1/policy/audit?cursor=%C2%B2", None, "cursor"),
]


# names in the URL that can name nothing: never sent to the database, answered like any unknown name
UNKNOWN_NAMES = [
    "/api/v1/stage/%00",
    "/api/v1/stage/abc%ED%A0%80",  # a surrogate's UTF-8 form: not UTF-8
    "/api/native/v1/requests/%00",
    "/api/native/v1/requests/a%09b",
    "/api/native/v1/requests/{request}/webhooks/%00",
]


def _stage_one(service: Service, token: str) -> str:
    with service.client(token) as client:
        response = client.post("/api/native/v1/requests", json={"paths": service.library_paths[:1]})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id


def _send(service: Service, token: str, method: str, url: str, body: Any, request_id: str) -> Any:
    url = url.replace("{request}", request_id)
    if isinstance(body, dict) and body.get("paths") == ["/{path}"]:
        body = {**body, "paths": service.library_paths[1:2]}
    with service.client(token) as client:
        content = _json(body) if body is not None else None
        return client.request(method, url, content=content, headers={"Content-Type": "application/json"})


def _answers_wrongly(response: Any, status: int, field: str | None) -> str | None:
    """Why the answer is not a problem+json of that status naming that field; None when it is."""
    try:
        assert_problem(response, status, field=field)
    except AssertionError as exc:
        return f"{response.status_code} {response.text[:200]} ({exc})"
    return None


def test_bad_input_is_a_400_naming_the_field(
    start_service: ServiceFactory, capture_logs: Callable[[LogFormat], LogCapture]
) -> None:
    logs = capture_logs("json")
    service = start_service()
    request_id = _stage_one(service, service.alice_token)
    wrong: list[str] = []
    for token, calls in ((service.alice_token, BAD_CALLS), (service.admin_token, ADMIN_CALLS)):
        for method, url, body, field in calls:
            token_used = service.admin_token if "/reports/" in url else token
            response = _send(service, token_used, method, url, body, request_id)
            why = _answers_wrongly(response, 400, field)
            if why is not None:
                wrong.append(f"{method} {url[:70]} {field}: {why}")
    for url in UNKNOWN_NAMES:
        method = "DELETE" if "/webhooks/" in url else "GET"
        response = _send(service, service.alice_token, method, url, None, request_id)
        why = _answers_wrongly(response, 404, None)
        if why is not None:
            wrong.append(f"{method} {url}: {why}")
    assert not wrong, "\n".join(wrong)
    with service.client(service.alice_token) as client:
        listed = client.get("/api/native/v1/requests").json()["requests"]
    assert [r["id"] for r in listed] == [request_id]  # nothing else was written
    records = [json.loads(line) for line in logs.text().splitlines()]
    assert [r for r in records if r["level"] in ("error", "critical")] == []  # no 500, no crash logged
    assert service.alice_token not in logs.text()


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": f"alice{NUL}"},
        {"sub": f"alice{SURROGATE}"},
        {"sub": "alice\nforged"},
        {"groups": [f"/star{NUL}"]},
        {"groups": [f"/star{SURROGATE}"]},
        {"groups": ["/star\tx"]},
    ],
)
def test_a_token_whose_subject_or_groups_cannot_be_stored_is_a_401(
    start_service: ServiceFactory, claims: dict[str, Any]
) -> None:
    service = start_service()
    token = service.jwt(**claims)
    with service.client(token) as client:
        response = client.post("/api/native/v1/requests", json={"paths": service.library_paths[:1]})
        listing = client.get("/api/native/v1/requests")
    assert_problem(response, 401)
    assert_problem(listing, 401)


def _raw_stage(service: Service, header_value: bytes) -> int:
    """A Tape REST stage with a raw clientinfo header (httpx refuses to send such bytes); the status."""
    address = urlsplit(service.url)
    body = _json({"files": [{"path": service.library_paths[0]}]})
    request = (
        b"POST /api/v1/stage HTTP/1.1\r\nHost: carousel\r\nConnection: close\r\n"
        + f"Authorization: Bearer {service.alice_token}\r\n".encode()
        + b"clientinfo: "
        + header_value
        + b"\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_clientinfo_header_that_cannot_be_stored_is_not_a_500(start_service: ServiceFactory) -> None:
    service = start_service()
    for value in (b"fts\x00job", b"fts\x01job", b"fts\xffjob\x7f"):
        assert _raw_stage(service, value) in (201, 400), value
