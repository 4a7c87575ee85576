"""Finds policies by name: a built-in map, then the entry point group "carousel.policies".

An entry point names a PolicyFactory (`module:callable`). A plug-in that fails to load, or options a policy
refuses, raise ConfigError naming the policy, so a broken configuration stops the start with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from carousel.domain.errors import ConfigError
from policies.base import Policy, PolicyFactory
from policies.carousel import build_carousel
from policies.cta import build_cta
from policies.fair_share import wrap_with_fair_share
from policies.fifo import build_fifo
from policies.star2006 import build_star2006

ENTRY_POINT_GROUP = "carousel.policies"

BUILT_IN: dict[str, PolicyFactory] = {
    "carousel": build_carousel,
    "cta": build_cta,
    "fifo": build_fifo,
    "star2006": build_star2006,
}
# An option of every policy: fair share across groups, a layer over whichever policy orders the work.
FAIR_SHARE_OPTION = "fair_share"


def declared_plugins() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_policies() -> list[str]:
    return sorted(set(BUILT_IN) | set(declared_plugins()))


def load_factory(name: str) -> PolicyFactory:
    if name in BUILT_IN:
        return BUILT_IN[name]
    plugin = declared_plugins().get(name)
    if plugin is None:
        raise ConfigError(f"unknown policy {name!r}: available are {', '.join(available_policies())}")
    try:
        factory = plugin.load()
    except Exception as exc:
        raise ConfigError(f"policy plug-in {name!r} ({plugin.value}) failed to load: {exc}") from exc
    if not callable(factory):
        raise ConfigError(f"policy plug-in {name!r} ({plugin.value}) is not callable")
    result: PolicyFactory = factory
    return result


def build_policy(name: str, options: Mapping[str, Any] | None = None) -> Policy:
    """The named policy built from its options; `fair_share` among them wraps it in the fair share layer."""
    factory = load_factory(name)
    own = dict(options or {})
    fair_share = own.pop(FAIR_SHARE_OPTION, None)
    try:
        policy = factory(own)
        if fair_share is not None:
            if not isinstance(fair_share, Mapping):
                raise TypeError(f"{FAIR_SHARE_OPTION} must be a table of options, not {fair_share!r}")
            if isinstance(policy, Policy):
                policy = wrap_with_fair_share(policy, fair_share)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"policy {name!r}: bad options: {exc}") from exc
    if not isinstance(policy, Policy):
        raise ConfigError(f"policy {name!r} built a {type(policy).__name__}, which has no plan(snapshot)")
    return policy
