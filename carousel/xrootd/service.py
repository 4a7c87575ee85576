"""The carousel service as the prepare program sees it: a few calls of its HTTP API, each with a timeout.

Requests are made and read through the native API (which knows XRootD's request id as an alias); disk
copies are released through the Tape REST API, whose release takes paths without a known request (XRootD's
evict carries none). Every failure becomes a ServiceError with a one-line message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from carousel.xrootd.settings import ProgramSettings

NATIVE = "/api/native/v1"
TAPE_REST = "/api/v1"
PAGE_SIZE = 1000
PROBLEM_JSON = "application/problem+json"


class ServiceError(Exception):
    """The service could not do what was asked; the message says why, in one line."""


class Unreachable(ServiceError):
    """No answer from the service at all (refused, timed out, name unknown, TLS failure)."""


class Refused(ServiceError):
    """The service answered with an error."""

    def __init__(self, message: str, status: int, *, problem: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem  # answered in problem+json, as carousel does (not a proxy or another server)

    @property
    def unknown_request(self) -> bool:
        return self.status == 404 and self.problem


@dataclass(frozen=True, slots=True)
class Submitted:
    request_id: str
    files_total: int


@dataclass(frozen=True, slots=True)
class Outlook:
    """Where an active request stands (the native summary's `outlook`, docs/api.md)."""

    position: int | None  # files of other work read before its first
    eta: str | None  # ISO 8601, as the service gave it
    rough: bool
    waiting: tuple[tuple[str, int], ...]  # (reason code, files)


@dataclass(frozen=True, slots=True)
class RequestState:
    """A request as `query` shows it: its id, state and how many of its files are in each client state."""

    request_id: str
    state: str
    files_total: int
    counts: dict[str, int]
    outlook: Outlook | None = None


def _outlook(given: Any) -> Outlook | None:
    """The summary's outlook; None when absent or not understood (a query still answers without it)."""
    if not isinstance(given, dict):
        return None
    try:
        position = given.get("position")
        eta = given.get("eta")
        return Outlook(
            position=None if position is None else int(position),
            eta=None if eta is None else str(eta),
            rough=bool(given.get("rough", False)),
            waiting=tuple((str(w["code"]), int(w["files"])) for w in given.get("waiting") or ()),
        )
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class FileState:
    path: str
    state: str
    on_disk: bool
    error: str | None


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _problem_detail(response: httpx.Response) -> str:
    """What an error answer says: the problem+json detail or title, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return _one_line(response.text) or response.reason_phrase
    if isinstance(body, dict):
        for key in ("detail", "title"):
            if isinstance(body.get(key), str) and body[key]:
                return _one_line(body[key])
    return _one_line(response.text)


class CarouselService:
    """One HTTP client for one program run. Use as a context manager."""

    def __init__(self, settings: ProgramSettings, *, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = settings.base_url
        headers = {"User-Agent": "carousel-xrootd-prepare"}
        token = settings.bearer_token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_s),
            verify=str(settings.ca_file) if settings.ca_file is not None else True,
            # The service is a site-local one: proxy variables meant for the outside world stay out of it.
            trust_env=False,
            transport=transport,
        )
        self._timeout_s = settings.timeout_s

    def __enter__(self) -> CarouselService:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _call(self, method: str, url: str, *, json: Any = None, params: Any = None) -> httpx.Response:
        try:
            response = self._client.request(method, url, json=json, params=params)
        except httpx.TimeoutException as exc:
            raise Unreachable(
                f"carousel at {self.base_url} did not answer within {self._timeout_s:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            reason = _one_line(str(exc)) or type(exc).__name__
            raise Unreachable(f"carousel at {self.base_url} is unreachable: {reason}") from exc
        if response.is_error:
            raise Refused(
                f"carousel answered {response.status_code}: {_problem_detail(response)}",
                response.status_code,
                problem=response.headers.get("content-type", "").startswith(PROBLEM_JSON),
            )
        return response

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise Refused(
                f"carousel at {self.base_url} answered something that is not JSON "
                f"(is url the service's address?): {_one_line(response.text, 80)!r}",
                response.status_code,
            ) from exc

    @staticmethod
    def _name(request_name: str) -> str:
        return quote(request_name, safe="")

    def submit(
        self,
        paths: Sequence[str],
        *,
        priority: int,
        alias: str | None,
        colocation: str | None,
        group: str | None,
        activity: str,
    ) -> Submitted:
        body: dict[str, Any] = {"paths": list(paths), "priority": priority, "activity": activity}
        for key, value in (("alias", alias), ("colocation", colocation), ("group", group)):
            if value is not None:
                body[key] = value
        answer = self._json(self._call("POST", f"{NATIVE}/requests", json=body))
        try:
            return Submitted(str(answer["id"]), int(answer["files_total"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise Refused(f"carousel answered a submit without an id: {answer!r:.200}", 201) from exc

    def cancel(self, request_name: str, paths: Sequence[str] | None) -> None:
        body = None if paths is None else {"paths": list(paths)}
        self._call("POST", f"{NATIVE}/requests/{self._name(request_name)}/cancel", json=body)

    def release(self, request_name: str, paths: Sequence[str]) -> None:
        """Release the paths' disk copies: in that request when the caller has one by that id, else in
        every request of the caller (the Tape REST API's rule for an id it does not know)."""
        self._call("POST", f"{TAPE_REST}/release/{self._name(request_name)}", json={"paths": list(paths)})

    def request_state(self, request_name: str) -> RequestState:
        answer = self._json(self._call("GET", f"{NATIVE}/requests/{self._name(request_name)}"))
        try:
            request = answer["request"]
            counts = {str(k): int(v) for k, v in answer["counts"].items()}
            return RequestState(
                str(request["id"]),
                str(request["state"]),
                int(request["files_total"]),
                counts,
                _outlook(answer.get("outlook")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise Refused(f"carousel answered a request's status oddly: {answer!r:.200}", 200) from exc

    def files(self, request_name: str, *, at_most: int) -> Iterator[FileState]:
        """The request's files in the client's order, page by page, at most `at_most` of them."""
        cursor: str | None = None
        seen = 0
        while seen < at_most:
            params: dict[str, Any] = {"limit": min(PAGE_SIZE, at_most - seen)}
            if cursor is not None:
                params["cursor"] = cursor
            page = self._json(
                self._call("GET", f"{NATIVE}/requests/{self._name(request_name)}/files", params=params)
            )
            try:
                entries = [
                    FileState(str(f["path"]), str(f["state"]), bool(f["on_disk"]), f.get("error"))
                    for f in page["files"]
                ]
                cursor = page["next_cursor"]
            except (KeyError, TypeError, AttributeError) as exc:
                raise Refused(f"carousel answered a page of files oddly: {page!r:.200}", 200) from exc
            yield from entries
            seen += len(entries)
            if cursor is None or not entries:
                return
