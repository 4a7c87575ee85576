"""What a scheduling policy is: a pure function from a queue snapshot to a plan.

A policy is built once from its options (validated then, so a bad option stops the start) and asked for a plan
each cycle. `plan` must depend on nothing but the snapshot (which carries the clock value, `snapshot.now`) and
the options it was built with: the live service and the simulator run the very same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from carousel.domain.planning import Plan, Snapshot


@runtime_checkable
class Policy(Protocol):
    name: str

    def plan(self, snapshot: Snapshot) -> Plan:
        """What to claim now. Same snapshot, same plan."""
        ...


# Builds a policy from its options (settings.policy_options); raises ValueError or TypeError on bad options.
PolicyFactory = Callable[[Mapping[str, Any]], Policy]
