"""Which scheduling policy plans, by name and options, and the audit trail's record of each change of it:
written by policy administration, read by the admin API, `carousel policy` and the dashboard."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """A policy by name and the options it is built from (fair share, quotas, depths, drive limits...)."""

    policy: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "options": dict(self.options)}


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    who: str
    reason: str
    version: int
    old: PolicyChoice
    new: PolicyChoice
