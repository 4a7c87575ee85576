"""Finds HSM adapters by name: a built-in map, then the entry point group "carousel.adapters".

Both name an AdapterFactory as `module:callable`, loaded only when asked for, so choosing one back-end
never imports another. A factory that fails to load, refuses its options, or builds something that does not
speak the adapter protocol raises ConfigError naming the adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from carousel.domain.clock import Clock
from carousel.domain.errors import ConfigError
from hsm_adapters.base import HsmAdapter

ENTRY_POINT_GROUP = "carousel.adapters"

AdapterFactory = Callable[[Mapping[str, Any], Clock], HsmAdapter]

BUILT_IN: dict[str, str] = {
    "simulated": "hsm_adapters.simulated.adapter:build_simulated_adapter",
    "command": "hsm_adapters.command:build_command_adapter",
}


def declared() -> dict[str, str]:
    """Every adapter name and the `module:callable` it stands for; built-ins win over plug-ins."""
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {**found, **BUILT_IN}


def load_factory(name: str) -> AdapterFactory:
    target = declared().get(name)
    if target is None:
        raise ConfigError(f"unknown adapter {name!r}: available are {', '.join(sorted(declared()))}")
    module_name, _, attribute = target.partition(":")
    try:
        factory = getattr(import_module(module_name), attribute)
    except Exception as exc:
        raise ConfigError(f"adapter {name!r} ({target}) failed to load: {exc}") from exc
    if not callable(factory):
        raise ConfigError(f"adapter {name!r} ({target}) is not callable")
    result: AdapterFactory = factory
    return result


def build_adapter(name: str, options: Mapping[str, Any], clock: Clock) -> HsmAdapter:
    factory = load_factory(name)
    try:
        adapter = factory(options, clock)
    except ConfigError as exc:
        raise ConfigError(f"adapter {name!r}: {exc}") from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"adapter {name!r}: bad options: {exc}") from exc
    if not isinstance(adapter, HsmAdapter):
        raise ConfigError(f"adapter {name!r} built a {type(adapter).__name__}, which is not an HsmAdapter")
    return adapter
