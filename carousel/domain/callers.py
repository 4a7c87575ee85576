"""Who is calling: what authentication (carousel.auth) makes of a credential, and what every use case
(carousel.intake, carousel.webhooks) checks."""

from __future__ import annotations

from dataclasses import dataclass

from carousel.domain.grants import UNRESTRICTED, Grants

DEFAULT_GROUP = "default"  # the fair-share group of requests whose caller has no group and names none


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as authentication found it. `groups` are the caller's groups, the first being the
    default group; `grants` what its credential allows (carousel.domain.grants)."""

    name: str
    groups: tuple[str, ...] = ()
    grants: Grants = UNRESTRICTED

    @property
    def default_group(self) -> str:
        return self.groups[0] if self.groups else DEFAULT_GROUP

    @property
    def limit_group(self) -> str | None:
        """The group whose call rate this caller's calls count against: its first group. None for a caller
        without a group: it belongs to none, so only per-caller limits bound it (unrelated callers without
        groups would otherwise share one bucket and one quota, and two of them could lock out a third)."""
        return self.groups[0] if self.groups else None

    def charges_group(self, group: str) -> bool:
        """Whether a request of this caller in `group` counts against that group's queue quota: not for
        the group `default` of a caller without groups (see limit_group)."""
        return bool(self.groups) or group != DEFAULT_GROUP


ANONYMOUS = Caller("anonymous")
