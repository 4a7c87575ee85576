"""Drive profiles: the figures of one tape drive model, read from a TOML file (one file per drive).

The built-in files live in `profiles/` next to this module; a custom profile is one more file with the same
keys, loaded by its path. Every key is documented in docs/simulated-library.md.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from carousel.domain.errors import ConfigError

_PROFILE_PACKAGE = "hsm_adapters.simulated"
_PROFILE_FOLDER = "profiles"


@dataclass(frozen=True, slots=True)
class DriveProfile:
    """One drive model's figures. Times in seconds, sizes in bytes, rates in bytes per second."""

    name: str
    description: str
    rate_bytes_per_s: float  # native read rate
    capacity_bytes: int
    load_s: float  # load and thread
    unload_s: float
    rewind_avg_s: float  # mean rewind from a uniformly random head position
    rewind_max_s: float  # rewind from the far end of the tape
    locate_avg_s: float  # mean locate from the load point to a uniformly random file
    wraps: int  # serpentine wraps (1 if none published)
    per_file_overhead_s: float  # once positioned: file mark, checks
    robot_exchange_s: float  # robot move to or from a drive, paid per mount and per dismount
    dismount_delay_s: float  # an idle tape stays mounted this long before it is unloaded
    first_load_penalty_s: float  # first load of new media (LTO-9 optimisation); applied only when asked
    rewind_at_unload: tuple[
        tuple[int, float], ...
    ]  # (max bytes moved since load, seconds); empty: by position
    mount_limit_soft: int
    mount_limit_hard: int
    estimated: frozenset[str]  # keys whose values are estimates, not published figures
    sources: str


_NonNegFloat = Annotated[float, Strict(), Field(ge=0)]
_PosFloat = Annotated[float, Strict(), Field(gt=0)]
_PosInt = Annotated[int, Strict(), Field(gt=0)]
_NonNegInt = Annotated[int, Strict(), Field(ge=0)]
_Text = Annotated[str, Strict(), Field(min_length=1)]


class _ProfileFile(BaseModel):
    """The schema of a profile file: strict types, no unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: _Text
    description: _Text
    rate_bytes_per_s: _PosFloat
    capacity_bytes: _PosInt
    load_s: _NonNegFloat
    unload_s: _NonNegFloat
    rewind_avg_s: _NonNegFloat
    rewind_max_s: _NonNegFloat
    locate_avg_s: _NonNegFloat
    wraps: _PosInt
    per_file_overhead_s: _NonNegFloat
    robot_exchange_s: _NonNegFloat
    dismount_delay_s: _NonNegFloat
    first_load_penalty_s: _NonNegFloat = 0.0
    rewind_at_unload: tuple[tuple[_PosInt, _NonNegFloat], ...] = ()
    mount_limit_soft: _PosInt
    mount_limit_hard: _PosInt
    estimated: tuple[_Text, ...]
    sources: _Text

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # The rewind model is rewind_max·x + c with c = avg − max/2 >= 0 (mean over uniform x = avg).
        if not self.rewind_avg_s <= self.rewind_max_s <= 2 * self.rewind_avg_s:
            raise _KeyProblem("rewind_max_s", "must lie between rewind_avg_s and twice rewind_avg_s")
        if self.mount_limit_soft > self.mount_limit_hard:
            raise _KeyProblem("mount_limit_soft", "must not exceed mount_limit_hard")
        bounds = [bound for bound, _ in self.rewind_at_unload]
        if bounds != sorted(set(bounds)):
            raise _KeyProblem("rewind_at_unload", "byte bounds must be strictly increasing")
        known = set(type(self).model_fields) - {"name", "description", "estimated", "sources"}
        for key in self.estimated:
            if key not in known:
                raise _KeyProblem("estimated", f"names {key!r}, which is not a profile key")
        return self


class _KeyProblem(ValueError):
    """A cross-key inconsistency, raised inside validation so the message can name the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


PROFILE_KEYS: tuple[str, ...] = tuple(_ProfileFile.model_fields)


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped with carousel, sorted."""
    folder = resources.files(_PROFILE_PACKAGE) / _PROFILE_FOLDER
    return sorted(
        entry.name.removesuffix(".toml") for entry in folder.iterdir() if entry.name.endswith(".toml")
    )


def load_profile(name_or_path: str | Path) -> DriveProfile:
    """A built-in profile by name ("lto9"), or any profile file by path.

    Raises ConfigError naming the file, the line and the key."""
    if isinstance(name_or_path, Path) or "/" in name_or_path or name_or_path.endswith(".toml"):
        path = Path(name_or_path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read drive profile: {exc.strerror or exc}") from exc
        return parse_profile(text, str(path))
    if name_or_path not in builtin_profiles():
        raise ConfigError(
            f"unknown drive profile {name_or_path!r}: built-in profiles are {', '.join(builtin_profiles())}"
            " (or give the path of a .toml file)"
        )
    resource = resources.files(_PROFILE_PACKAGE) / _PROFILE_FOLDER / f"{name_or_path}.toml"
    return parse_profile(resource.read_text(encoding="utf-8"), f"{_PROFILE_FOLDER}/{name_or_path}.toml")


def parse_profile(text: str, source: str) -> DriveProfile:
    """Validate the text of a profile file; `source` names the file in error messages."""
    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    try:
        model = _ProfileFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, text, source)) from exc
    return DriveProfile(
        name=model.name,
        description=model.description,
        rate_bytes_per_s=model.rate_bytes_per_s,
        capacity_bytes=model.capacity_bytes,
        load_s=model.load_s,
        unload_s=model.unload_s,
        rewind_avg_s=model.rewind_avg_s,
        rewind_max_s=model.rewind_max_s,
        locate_avg_s=model.locate_avg_s,
        wraps=model.wraps,
        per_file_overhead_s=model.per_file_overhead_s,
        robot_exchange_s=model.robot_exchange_s,
        dismount_delay_s=model.dismount_delay_s,
        first_load_penalty_s=model.first_load_penalty_s,
        rewind_at_unload=model.rewind_at_unload,
        mount_limit_soft=model.mount_limit_soft,
        mount_limit_hard=model.mount_limit_hard,
        estimated=frozenset(model.estimated),
        sources=model.sources,
    )


def _describe(exc: ValidationError, text: str, source: str) -> str:
    """One line per problem: file, line of the key when the file has it, key, and what is wrong."""
    problems = []
    for error in exc.errors():
        context = error.get("ctx") or {}
        inner = context.get("error")
        if isinstance(inner, _KeyProblem):
            key, message = inner.key, inner.message
        else:
            key = str(error["loc"][0]) if error["loc"] else "?"
            message = _MESSAGES.get(error["type"], error["msg"])
            if len(error["loc"]) > 1:
                message = f"item {'.'.join(str(part) for part in error['loc'][1:])}: {message}"
        line = _line_of(text, key)
        where = f"{source}: line {line}" if line else source
        problems.append(f"{where}: key {key!r}: {message}")
    return "; ".join(problems)


_MESSAGES = {
    "missing": "missing (every profile key is required; see docs/simulated-library.md)",
    "extra_forbidden": f"unknown key (known keys: {', '.join(_ProfileFile.model_fields)})",
}


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None
