"""What policy administration reads and writes: the active policy and pages of the audit trail. The choice
of a policy and an audit entry are domain values (carousel.domain.policy_choice)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from carousel.domain.policy_choice import AuditEntry, PolicyChoice

SETTINGS_VERSION = 0  # the settings' policy, before any change through administration
FROM_SETTINGS = "settings"


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
class AuditPage:
    entries: tuple[AuditEntry, ...]
    next_cursor: str | None
