"""The command adapter's options, checked once at start: a wrong one stops carousel with a message naming it.

Each program is an argv list (never a shell string) whose elements may hold placeholders such as `{tape}`,
filled per call; `{{` and `}}` stand for literal braces.
"""

from __future__ import annotations

import shutil
import string
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from carousel.domain.errors import ConfigError
from hsm_adapters.base import DEFAULT_SERVICE_CLASS

# What each program may be told through its arguments (everything else comes on standard input).
BATCH_PLACEHOLDERS = frozenset({"batch", "tape", "service_class"})

Seconds = Annotated[float, Field(gt=0, strict=True)]


def placeholders(element: str) -> set[str]:
    """The placeholder names in one argv element; ValueError when it is not a plain `{name}` template."""
    found = set()
    for _, name, spec, conversion in string.Formatter().parse(element):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"placeholder {{{name}}} in {element!r} is not a name")
        if spec or conversion:
            raise ValueError(f"placeholder {{{name}}} in {element!r} takes no format spec or conversion")
        found.add(name)
    return found


def render(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    return [element.format_map(values) for element in argv]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ProgramSpec(_Options):
    argv: tuple[StrictStr, ...] = Field(min_length=1)
    timeout_s: Seconds

    allowed_placeholders: ClassVar[frozenset[str]] = frozenset()  # per kind of program

    @field_validator("argv", mode="before")
    @classmethod
    def _argv_from_list(cls, value: Any) -> Any:
        # TOML and JSON give lists; the model keeps a tuple.
        return tuple(value) if isinstance(value, list) else value

    @field_validator("argv", mode="after")
    @classmethod
    def _known_placeholders(cls, argv: tuple[str, ...]) -> tuple[str, ...]:
        if not argv[0]:
            raise ValueError("argv[0] (the program) is empty")
        for element in argv:
            unknown = placeholders(element) - cls.allowed_placeholders
            if unknown:
                allowed = ", ".join(f"{{{name}}}" for name in sorted(cls.allowed_placeholders)) or "none"
                raise ValueError(
                    f"unknown placeholder {{{sorted(unknown)[0]}}} in {element!r} (allowed: {allowed})"
                )
        return argv


class LookupSpec(ProgramSpec):
    timeout_s: Seconds = 60.0
    max_paths_per_call: int = Field(default=1000, ge=1)


class StageSpec(ProgramSpec):
    allowed_placeholders: ClassVar[frozenset[str]] = BATCH_PLACEHOLDERS
    timeout_s: Seconds = 6 * 3600.0  # a whole batch of one tape: hours are normal
    idle_timeout_s: Seconds | None = None  # silence that means "hung", however long the batch


class CancelSpec(ProgramSpec):
    allowed_placeholders: ClassVar[frozenset[str]] = BATCH_PLACEHOLDERS
    timeout_s: Seconds = 30.0


class EvictSpec(ProgramSpec):
    timeout_s: Seconds = 60.0
    max_paths_per_call: int = Field(default=1000, ge=1)


class HealthSpec(ProgramSpec):
    timeout_s: Seconds = 10.0
    cache_s: float = Field(default=30.0, ge=0)  # answer health() from the last run for this long


# What the drive program is told: which drive, and what to do with it (hsm_adapters.base.DriveCommand).
DRIVE_PLACEHOLDERS = frozenset({"drive", "command"})


class DriveSpec(ProgramSpec):
    allowed_placeholders: ClassVar[frozenset[str]] = DRIVE_PLACEHOLDERS
    timeout_s: Seconds = 60.0


class CommandOptions(_Options):
    lookup: LookupSpec
    stage: StageSpec
    cancel: CancelSpec | None = None
    health: HealthSpec | None = None
    evict: EvictSpec | None = None  # absent: the HSM keeps no disk copy carousel must tell it about
    drive: DriveSpec | None = None  # absent: carousel takes no drive down or up
    drives: tuple[StrictStr, ...] = ()  # the HSM's drive names, as the drive program and MOUNTED lines say
    max_workers: int = Field(default=2, ge=1, le=256)  # stage programs running at once
    queue_files: int = Field(default=10_000, ge=1)  # files accepted and not finished, before capacity says 0
    service_classes: tuple[StrictStr, ...] = (DEFAULT_SERVICE_CLASS,)
    kill_grace_s: float = Field(default=5.0, ge=0)
    degraded_after_failures: int = Field(default=1, ge=1)
    offline_after_failures: int = Field(default=3, ge=1)
    offline_hold_s: float = Field(default=60.0, ge=0)  # then DEGRADED, so the scheduler may try again
    remember_keys: int = Field(default=100_000, ge=1)  # finished batch and file keys kept for idempotency

    @field_validator("service_classes", "drives", mode="before")
    @classmethod
    def _classes_from_list(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _thresholds_in_order(self) -> CommandOptions:
        if self.offline_after_failures < self.degraded_after_failures:
            raise ValueError(
                f"offline_after_failures ({self.offline_after_failures}) must be at least "
                f"degraded_after_failures ({self.degraded_after_failures})"
            )
        if not self.service_classes:
            raise ValueError("service_classes must name at least one class")
        if self.drive is not None and not self.drives:
            raise ValueError("drive needs drives: the names of the drives the program can take down and up")
        return self


def _describe(error: ValidationError) -> str:
    problems = []
    for detail in error.errors(include_url=False):
        where = ".".join(str(part) for part in detail["loc"])
        if detail["type"] == "extra_forbidden":
            message = "unknown option"
        elif detail["type"] == "missing":
            message = "required option is missing"
        elif detail["type"] == "tuple_type":
            message = f"must be a list of strings (an argv, never a shell string), got {detail['input']!r}"
        else:
            message = detail["msg"].removeprefix("Value error, ")
            if isinstance(detail["input"], str | int | float | bool):
                message += f" (got {detail['input']!r})"
        problems.append(f"option {where!r}: {message}" if where else message)
    return "; ".join(problems)


def parse_options(options: Mapping[str, object]) -> CommandOptions:
    """Validated options, or ConfigError naming every bad key; every program must exist and be executable."""
    try:
        parsed = CommandOptions.model_validate(dict(options))
    except ValidationError as exc:
        raise ConfigError(f"command adapter: {_describe(exc)}") from None
    for name in ("lookup", "stage", "cancel", "health", "evict", "drive"):
        spec: ProgramSpec | None = getattr(parsed, name)
        if spec is not None and shutil.which(spec.argv[0]) is None:
            problem = f"program {spec.argv[0]!r} is not found or not executable"
            raise ConfigError(f"command adapter: option '{name}.argv': {problem}")
    return parsed
