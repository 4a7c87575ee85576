"""What the external HSM programs and carousel say to each other: JSON lines and exit codes.

Every program gets its work as JSON lines on standard input (one object per file) and answers with JSON lines
on standard output, one object per file, printed as it goes. JSON rather than tab-separated fields because
paths and reasons may hold tabs, spaces or any other character, and because a wrapper may add fields of its
own (they are ignored) without breaking the parser. Standard error is free text: carousel keeps its tail as
the reason when a program fails. docs/command-adapter.md is the reference for program authors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

PROTOCOL_VERSION = "1"
PROTOCOL_ENV = "CAROUSEL_HSM_PROTOCOL"  # set in every program's environment, so a wrapper can check it

# Exit statuses, after BSD sysexits.h: EX_NOINPUT ("input did not exist") and EX_TEMPFAIL ("try again").
EXIT_OK = 0
EXIT_NOT_ON_TAPE = 66  # files the program did not report are definitely not on tape: retrying will not help
EXIT_RETRY_LATER = 75  # the HSM is busy or briefly unavailable: files not reported may be retried later

EXCERPT_CHARS = 120  # how much of a bad line a reason quotes


# adler32 as 8 hex digits (either case; carousel keeps lower case), as WLCG storage prints it
Adler32 = Annotated[StrictStr, Field(pattern=r"^[0-9a-fA-F]{8}$")]


class _Line(BaseModel):
    # strict: a number in quotes or true-as-1 is a broken program, not something to guess about.
    # extra fields are ignored so wrappers can print more than the protocol needs.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class LookupOnTapeLine(_Line):
    path: StrictStr
    status: Literal["ON_TAPE"]
    tape: Annotated[StrictStr, Field(min_length=1)]
    position_bytes: Annotated[StrictInt, Field(ge=0)]
    size_bytes: Annotated[StrictInt, Field(ge=0)]
    on_disk: StrictBool = False
    checksum: Adler32 | None = None


class LookupNotOnTapeLine(_Line):
    path: StrictStr
    status: Literal["NOT_ON_TAPE"]
    reason: StrictStr = "the HSM holds no tape copy"
    on_disk: StrictBool = False


class LookupUnknownLine(_Line):
    path: StrictStr
    status: Literal["UNKNOWN"]
    reason: StrictStr = "the HSM gave no answer"


class StageFileLine(_Line):
    key: StrictStr
    status: Literal["STARTED", "STAGED", "FAILED", "CANCELLED"]
    reason: StrictStr | None = None
    retryable: StrictBool = True
    bytes: Annotated[StrictInt, Field(ge=0)] | None = None
    checksum: Adler32 | None = None  # STAGED: the adler32 of the bytes written at the destination


class StageTapeLine(_Line):
    event: Literal["MOUNTED", "UNMOUNTED", "MOUNT_FAILED"]
    tape: StrictStr | None = None
    drive: StrictStr | None = None
    reason: StrictStr | None = None  # MOUNT_FAILED: why the cartridge could not be mounted


class CancelLine(_Line):
    key: StrictStr
    status: Literal["CANCELLED", "IN_PROGRESS"]


class HealthLine(_Line):
    health: Literal["ONLINE", "DEGRADED", "OFFLINE"]
    reason: StrictStr | None = None


_LineT = TypeVar("_LineT", bound=_Line)

LookupLine = LookupOnTapeLine | LookupNotOnTapeLine | LookupUnknownLine
StageLine = StageFileLine | StageTapeLine


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that does not follow the protocol: why, and what it said."""

    number: int
    problem: str
    excerpt: str

    def describe(self) -> str:
        return f"unparseable line {self.number} ({self.problem}): {self.excerpt!r}"


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def _summarise(error: ValidationError) -> str:
    parts = []
    for detail in error.errors(include_url=False):
        where = ".".join(str(part) for part in detail["loc"]) or "line"
        parts.append(f"{where}: {detail['msg']}")
    return "; ".join(parts)


def _json_object(number: int, text: str) -> Mapping[str, object] | BadLine:
    try:
        value = json.loads(text)
    except ValueError:
        return BadLine(number, "not JSON", excerpt(text))
    if not isinstance(value, dict):
        return BadLine(number, "not a JSON object", excerpt(text))
    return value


def _validate(model: type[_LineT], number: int, text: str, obj: Mapping[str, object]) -> _LineT | BadLine:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        return BadLine(number, _summarise(exc), excerpt(text))


_LOOKUP_MODELS: dict[object, type[LookupOnTapeLine] | type[LookupNotOnTapeLine] | type[LookupUnknownLine]] = {
    "ON_TAPE": LookupOnTapeLine,
    "NOT_ON_TAPE": LookupNotOnTapeLine,
    "UNKNOWN": LookupUnknownLine,
}


def parse_lookup_line(number: int, text: str) -> LookupLine | BadLine:
    obj = _json_object(number, text)
    if isinstance(obj, BadLine):
        return obj
    model = _LOOKUP_MODELS.get(obj.get("status"))
    if model is None:
        return BadLine(number, "status must be ON_TAPE, NOT_ON_TAPE or UNKNOWN", excerpt(text))
    return _validate(model, number, text, obj)


def parse_stage_line(number: int, text: str) -> StageLine | BadLine:
    obj = _json_object(number, text)
    if isinstance(obj, BadLine):
        return obj
    if "event" in obj:
        return _validate(StageTapeLine, number, text, obj)
    return _validate(StageFileLine, number, text, obj)


def parse_cancel_line(number: int, text: str) -> CancelLine | BadLine:
    obj = _json_object(number, text)
    if isinstance(obj, BadLine):
        return obj
    return _validate(CancelLine, number, text, obj)


def parse_health_line(number: int, text: str) -> HealthLine | BadLine:
    obj = _json_object(number, text)
    if isinstance(obj, BadLine):
        return obj
    return _validate(HealthLine, number, text, obj)


def request_lines(objects: list[dict[str, object]]) -> bytes:
    """The standard input of a call: one compact JSON object per line, UTF-8."""
    return b"".join(
        json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for obj in objects
    )
