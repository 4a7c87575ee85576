"""GET and HEAD on a staged file's URL (the path at the service's root, as a Tape REST client staged it):
the bytes from the disk buffer, streamed with Range support (Starlette's FileResponse), and
`Digest: adler32=<hex>` when the request sends `Want-Digest: adler32` (as dCache and XRootD's HTTP do, so
gfal-sum works). A file not on disk gets problem+json: 409 when carousel knows it, 404 when not, each saying
how to stage it.

A catch-all, added after every other route and only with the disk buffer on. A path that another route
serves with other methods gets 405, never this route's answer (Starlette would pick the catch-all there).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response
from starlette.routing import Match

from carousel.api.context import Context, CurrentCaller, DbSlot
from carousel.api.problems import PROBLEM_JSON, problem_response
from carousel.buffer.layout import BufferLayout
from carousel.intake import staged_bytes as case

_BYTES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The staged file's bytes", "content": {"application/octet-stream": {}}},
    206: {"description": "The bytes a Range asked for", "content": {"application/octet-stream": {}}},
}
_ANSWERS: dict[int | str, dict[str, Any]] = _BYTES | {
    code: {"description": description, "content": {PROBLEM_JSON: {}}}
    for code, description in (
        (400, "A path that can name no file in the buffer"),
        (401, "No valid credentials (WWW-Authenticate says why)"),
        (403, "No storage.read or storage.stage scope covers the path"),
        (404, "Not a file carousel knows: stage it first (POST /api/v1/stage)"),
        (405, "The path belongs to an API route that takes another method"),
        (409, "Known, but on tape only (never staged, or evicted): stage it again"),
        (416, "A Range outside the file"),
        (429, "Over the call rate (Retry-After says when to come back)"),
        (503, "The database is unreachable (Retry-After)"),
    )
}

router = APIRouter(tags=["staged files"], responses=_ANSWERS)


class StagedFileResponse(FileResponse):
    """A file streamed in 1 MiB reads (Starlette's 64 KiB make each read, and each pass through the
    middleware, cost more than its bytes: a sixth of the throughput on the benchmark, docs/benchmarks.md)."""

    chunk_size = 1024 * 1024


CHECKSUM_ALGORITHM = "adler32"


def buffer_layout(request: Request) -> BufferLayout:
    layout: BufferLayout = request.app.state.buffer_layout
    return layout


def wants_adler32(want_digest: str | None) -> bool:
    """RFC 3230 Want-Digest: a list of algorithms with optional q-values; adler32 unless its q is 0."""
    if not want_digest:
        return False
    for item in want_digest.split(","):
        name, _, params = item.strip().partition(";")
        if name.strip().lower() == CHECKSUM_ALGORITHM:
            q = params.strip().lower()
            return not (q.startswith("q=") and q[2:].strip() in ("0", "0.0", "0.00", "0.000"))
    return False


OTHER_METHODS = ("POST", "PUT", "PATCH", "DELETE")  # this route serves GET and HEAD


def other_methods(request: Request) -> list[str]:
    """The methods other routes serve at this path: asked of the router as if the request came with each
    (a GET route at this path would have been chosen before this one)."""
    return [
        method
        for method in OTHER_METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL
            for route in request.app.router.routes
        )
    ]


# one operation id per method: OpenAPI names each operation once (GET and HEAD of one route would share it)
@router.head("/{path:path}", operation_id="head_staged_file")
@router.get("/{path:path}", operation_id="read_staged_file")
def read_staged_file(
    path: str,
    request: Request,
    context: Context,
    caller: CurrentCaller,
    layout: Annotated[BufferLayout, Depends(buffer_layout)],
    _slot: DbSlot,
) -> Response:
    """A staged file's bytes (Range, HEAD, Want-Digest: adler32)."""
    methods = other_methods(request)
    if methods:
        return problem_response(
            405,
            detail=f"{request.method} is not allowed here: {', '.join(methods)} is",
            headers={"Allow": ", ".join(methods)},
        )
    found = case.staged_bytes(
        context.session_factory,
        context.clock,
        caller,
        layout,
        "/" + path,
        max_path_bytes=context.settings.limits.max_path_length,
    )
    headers: dict[str, str] = {}
    if found.checksum is not None and wants_adler32(request.headers.get("want-digest")):
        headers["Digest"] = f"{CHECKSUM_ALGORITHM}={found.checksum}"
    return StagedFileResponse(
        found.file, headers=headers, media_type="application/octet-stream", content_disposition_type="inline"
    )
