"""What a scheduling policy is: a pure function from a queue snapshot to a plan.

A policy is built once from its options (validated then, so a bad option stops the start) and asked for a plan
each cycle. `plan` must depend on nothing but the snapshot (which carries the clock value, `snapshot.now`) and
the options it was built with: the live service and the simulator run the very same code.

A policy may also declare, as `library_needs`, the HSM side of the system it comes from
(`carousel.domain.library_needs`): the trace replay sets the simulated library up that way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from carousel.domain.errors import ConfigError
from carousel.domain.library_needs import LibraryNeeds
from carousel.domain.planning import Plan, Snapshot


@runtime_checkable
class Policy(Protocol):
    name: str

    def plan(self, snapshot: Snapshot) -> Plan:
        """What to claim now. Same snapshot, same plan."""
        ...


# Builds a policy from its options (settings.policy_options); raises ValueError or TypeError on bad options.
PolicyFactory = Callable[[Mapping[str, Any]], Policy]


def library_needs_of(policy: Policy) -> LibraryNeeds:
    """What `policy` declares of its library, or the default (tape-ordered, no depth bound, position order)
    when it declares nothing, as a plug-in may."""
    needs = getattr(policy, "library_needs", None)
    if needs is None:
        return LibraryNeeds()
    if not isinstance(needs, LibraryNeeds):
        raise ConfigError(
            f"policy {policy.name!r}: library_needs is a {type(needs).__name__}, not LibraryNeeds"
        )
    return needs
