"""RFC 7807 problem details for every error the service answers: domain errors, request validation
(rewritten to 400 naming the field), unknown routes and methods, oversized bodies, and crashes."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from carousel.auth.errors import Challenged
from carousel.domain.errors import DomainError, TooManyRequests, Unauthorized, Unavailable

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: text echoed from a client (a path with a lone surrogate,
    say) always encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def problem_response(
    status: int,
    *,
    title: str | None = None,
    detail: str | None = None,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
    }
    if detail is not None:
        body["detail"] = detail
    if field is not None:
        body["field"] = field
    if extra:
        body.update(extra)
    return AsciiJSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=dict(headers or {}))


def field_name(loc: Sequence[int | str]) -> str:
    """("body", "files", 3, "path") -> "files[3].path"; the query/path/header prefix goes too."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        else:
            name += f".{part}" if name else str(part)
    return name or "body"


# what pydantic says of a body that is not an object: with a content type other than JSON, FastAPI hands the
# model the raw bytes (curl -d sends a form's type), and the answer should say what to send instead
_NOT_AN_OBJECT = {"model_attributes_type", "dict_type", "model_type"}


def _not_json(content_type: str | None) -> bool:
    """A content type FastAPI does not parse as JSON (none at all is parsed: docs/api.md)."""
    kind = (content_type or "application/json").split(";", 1)[0].strip().lower()
    return not (kind == "application/json" or kind.endswith("+json"))


def _validation_problem(exc: RequestValidationError, content_type: str | None = None) -> JSONResponse:
    errors = list(exc.errors())
    if (
        content_type is not None
        and _not_json(content_type)
        and any(tuple(e.get("loc", ())) == ("body",) and e.get("type") in _NOT_AN_OBJECT for e in errors)
    ):
        return problem_response(
            415,
            detail=f"the body must be JSON: send Content-Type: application/json (got {content_type[:100]!r})",
            field="body",
        )
    problems: list[dict[str, str]] = []
    for error in errors:
        if error.get("type") == "json_invalid":
            reason = error.get("ctx", {}).get("error", "not JSON")
            position = error["loc"][-1] if error.get("loc") else "?"
            return problem_response(
                400, detail=f"the body is not valid JSON: {reason} (at character {position})", field="body"
            )
        name = field_name(error.get("loc", ()))
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "missing" and name == "body":
            message = "a JSON body is required"
        problems.append({"field": name, "message": message})
    shown = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return problem_response(
        400,
        title="Invalid input",
        detail=shown + more,
        field=problems[0]["field"] if problems else None,
        extra={"errors": problems[:100]},
    )


def domain_problem(exc: DomainError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A domain error's answer, with the headers its kind calls for (Retry-After, WWW-Authenticate)."""
    added: dict[str, str] = dict(headers or {})
    if isinstance(exc, TooManyRequests) or (isinstance(exc, Unavailable) and exc.retry_after_s is not None):
        added["Retry-After"] = str(exc.retry_after_s)
    if isinstance(exc, Challenged):
        added["WWW-Authenticate"] = exc.challenge  # RFC 6750: what the client should do
    elif isinstance(exc, Unauthorized):
        added["WWW-Authenticate"] = "Bearer"
    return problem_response(exc.status, title=exc.title, detail=exc.detail, field=exc.field, headers=added)


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        if exc.status >= 500:
            log.error("%s %s: %s", request.method, request.url.path, exc.detail)
        return domain_problem(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_problem(exc, request.headers.get("content-type"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else None
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no such resource: {request.url.path}"
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}"
        return problem_response(exc.status_code, detail=detail, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return problem_response(500, detail="the service failed to answer; the error is in its log")
