"""What XRootD's Generic Prepare Interface passes to its program, parsed.

XRootD runs `<program> [-C] [-p PRIO] [-w] -- <reqid> <stage|prep|evict|cancel|query> [paths...]` with the
client's trace id in XRDPREP_TID and, for -C, the co-location path in XRDPREP_COLOC. Later XRootD releases
also pass -a (refresh) and -n fin|rdy (notification): accepted and ignored, so an upgrade of XRootD does not
stop staging.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NoReturn

NO_REQUEST_ID = "*"  # XRootD's request id for prep and evict, which make none
# What a request id must be to name a carousel request (the native API's alias rule,
# carousel.intake.access): XRootD's own ids are hex digits, ':' and '.'. Any other is refused, never queued
# without its name (it could then be neither queried nor cancelled).
REQUEST_ID = re.compile(r"^[A-Za-z0-9_.:@+=-]{1,256}$")


def escaped(text: str) -> str:
    """Text safe to write on one log line: every character that is not printable (a line break, a tab, a
    byte that was not UTF-8) written as its escape, so no one can forge a line of xrootd's log."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode() for c in text
    )


class Operation(StrEnum):
    STAGE = "stage"
    PREP = "prep"
    EVICT = "evict"
    CANCEL = "cancel"
    QUERY = "query"


class UsageError(Exception):
    """The program was called in a way XRootD never calls it."""


@dataclass(frozen=True, slots=True)
class PrepareCall:
    operation: Operation
    request_id: str  # XRootD's; "*" when it made none
    paths: tuple[str, ...]
    priority: int = 0
    colocation: str | None = None  # the path to co-locate with (-C and XRDPREP_COLOC)
    for_writing: bool = False  # -w: the files will be modified (nothing to do for a tape recall)
    client: str = "anon"  # XRDPREP_TID: who asked, for the log

    @property
    def has_request_id(self) -> bool:
        return self.request_id != NO_REQUEST_ID


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> _Parser:
    parser = _Parser(prog="carousel-xrootd-prepare", add_help=False, allow_abbrev=False)
    parser.add_argument("-C", dest="colocate", action="store_true")
    parser.add_argument("-p", dest="priority", type=int, default=0)
    parser.add_argument("-w", dest="for_writing", action="store_true")
    parser.add_argument("-a", dest="refresh", action="store_true")
    parser.add_argument("-n", dest="notify", choices=("fin", "rdy"))
    parser.add_argument("request_id")
    parser.add_argument("operation", choices=[op.value for op in Operation])
    parser.add_argument("paths", nargs="*")
    return parser


def strip_cgi(path: str) -> str:
    """The path without an XRootD query string: with `-cgi`, XRootD appends `?...` to each path (and
    5.5.3 copies the first path's onto every path). A '?' cannot be part of a path in a root:// URL."""
    return path.split("?", 1)[0]


def _require_utf8(text: str, what: str) -> None:
    """Arguments arrive as bytes; Python keeps the bytes that are not UTF-8 as lone surrogates
    (surrogateescape), which the service's JSON cannot carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{what} {escaped(text[:200])!r} is not valid UTF-8: refused, nothing queued"
        ) from None


def parse_call(argv: Sequence[str], env: Mapping[str, str]) -> PrepareCall:
    """The call XRootD made, from the program's arguments (without the program name) and environment."""
    if "--" not in argv:
        raise UsageError("expected '-- <reqid> <operation> [paths...]' (is XRootD's GPI calling?)")
    args = _parser().parse_args(list(argv))
    request_id = str(args.request_id)
    if not request_id.strip():
        raise UsageError("the request id is empty")
    if request_id != NO_REQUEST_ID and not REQUEST_ID.match(request_id):
        raise UsageError(
            f"request id {escaped(request_id[:80])!r} cannot name a carousel request (at most 256 characters"
            " of A-Z a-z 0-9 _ . : @ + = -): refused, nothing queued"
        )
    operation = Operation(args.operation)
    paths = tuple(strip_cgi(p) for p in args.paths)
    for path in paths:
        _require_utf8(path, "path")
    if operation in (Operation.STAGE, Operation.PREP, Operation.EVICT) and not paths:
        raise UsageError(f"{operation.value} needs at least one path")
    colocation = (env.get("XRDPREP_COLOC") or None) if args.colocate else None
    if colocation is not None:
        _require_utf8(colocation, "co-location path")
    return PrepareCall(
        operation=operation,
        request_id=request_id,
        paths=paths,
        priority=int(args.priority),
        colocation=strip_cgi(colocation) if colocation else None,
        for_writing=bool(args.for_writing),
        client=env.get("XRDPREP_TID") or "anon",
    )
