"""Who is calling: what authentication (carousel.auth) makes of a credential, and what every use case
(carousel.intake, carousel.webhooks) checks."""

from __future__ import annotations

from dataclasses import dataclass

from carousel.domain.grants import UNRESTRICTED, Grants


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as authentication found it. `groups` are the caller's groups, the first being the
    default group; `grants` what its credential allows (carousel.domain.grants)."""

    name: str
    groups: tuple[str, ...] = ()
    grants: Grants = UNRESTRICTED

    @property
    def default_group(self) -> str:
        return self.groups[0] if self.groups else "default"


ANONYMOUS = Caller("anonymous")
