"""What policy administration reads and writes: the active policy and the audit trail's entries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SETTINGS_VERSION = 0  # the settings' policy, before any change through administration
FROM_SETTINGS = "settings"


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """A policy by name and the options it is built from (fair share, quotas, depths, drive limits...)."""

    policy: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "options": dict(self.options)}


@dataclass(frozen=True, slots=True)
class ActivePolicySettings:
    """The policy the next cycle plans with. Version 0 is the settings' policy (nothing changed yet)."""

    choice: PolicyChoice
    version: int
    changed_at: datetime | None
    changed_by: str  # "settings" until the first change

    @property
    def from_settings(self) -> bool:
        return self.version == SETTINGS_VERSION


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    who: str
    reason: str
    version: int
    old: PolicyChoice
    new: PolicyChoice


@dataclass(frozen=True, slots=True)
class AuditPage:
    entries: tuple[AuditEntry, ...]
    next_cursor: str | None
