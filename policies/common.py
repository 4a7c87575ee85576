"""Small pieces the tape-level policies share: the offline plan, which tapes hold a drive, a tape's main
group, the library's room per class of service, and cost figures for libraries that publish none."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from carousel.domain.planning import GroupDemand, LibraryCosts, Plan, Snapshot, TapeDemand

OFFLINE = "the library is offline"
# The longest any duration option may be: a year. A wait added to a request's age must stay a date the clock
# can hold (10^12 s overflowed planning), and no scheduling wait is meant to last longer.
MAX_DURATION_S = 366 * 86_400.0


class PolicyOptions(BaseModel):
    """A policy's options as admins give them (JSON, TOML): strict, so a number is a number and never the
    string "300" or true (pydantic's lax mode would take both and keep them); no unknown names; frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def offline_plan(snapshot: Snapshot) -> Plan:
    return Plan(waiting={t.tape: OFFLINE for t in snapshot.tapes})


def busy_tapes(snapshot: Snapshot) -> set[str]:
    """Tapes the library holds work for: mounted and reading, or waiting for a drive. Each takes a drive."""
    return {t.tape for t in snapshot.in_flight_tapes if t.files > 0}


def main_group(groups: Iterable[GroupDemand], default: str = "default") -> str:
    """The group with most files on a tape (ties: the name first in order): whom a mount is for."""
    best: GroupDemand | None = None
    for group in groups:
        if best is None or (group.files, best.group) > (best.files, group.group):
            best = group
    return default if best is None else best.group


def age_s(tape: TapeDemand, now: datetime) -> float:
    return max(0.0, (now - tape.oldest).total_seconds())


class CostOptions(PolicyOptions):
    """Cost figures to plan with when the library publishes none (`LibraryView.costs` is None). The
    defaults are an LTO-8 drive's, as the simulated library publishes them for profiles/lto8.toml: 5 of its
    13 locate points, to 0.1 s (tests/unit/policies/test_cost_defaults.py holds them to the profile)."""

    mount_s: float = Field(default=28.0, ge=0, le=MAX_DURATION_S)
    unmount_s: float = Field(default=96.0, ge=0, le=MAX_DURATION_S)
    rate_bytes_per_s: float = Field(default=360e6, gt=0)
    overhead_s: float = Field(default=2.0, ge=0, le=MAX_DURATION_S)
    # (files read in one pass, mean locate per file)
    locate_s: tuple[tuple[int, float], ...] = ((1, 59.0), (8, 44.6), (64, 41.2), (512, 29.8), (4096, 8.6))

    @field_validator("locate_s", mode="before")
    @classmethod
    def _pairs_from_lists(cls, value: Any) -> Any:
        """JSON and TOML give lists: strict validation takes tuples only."""
        if isinstance(value, list):
            return tuple(tuple(pair) if isinstance(pair, list) else pair for pair in value)
        return value

    def costs(self) -> LibraryCosts:
        return LibraryCosts(
            mount_s=self.mount_s,
            unmount_s=self.unmount_s,
            rate_bytes_per_s=self.rate_bytes_per_s,
            overhead_s=self.overhead_s,
            locate_s=self.locate_s,
        )


def costs_of(snapshot: Snapshot, fallback: CostOptions) -> LibraryCosts:
    return snapshot.library.costs or fallback.costs()
