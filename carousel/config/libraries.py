"""Several libraries behind one queue (`libraries`, docs/decisions.md §17): each a name with its adapter and
the adapter's options. Without `libraries` the service's `adapter` and `adapter_options` are one library
named `default`, as they always were.

The replay runs a site of several libraries (`carousel simulate --libraries`), and so does the service
(`carousel serve`, `carousel scheduler`: `build_libraries`). Commands that work on one library (`carousel
library files`, the reports' and the policy commands' adapter) refuse several, in one line that says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, model_validator

from carousel.domain.errors import ConfigError, InvalidInput
from carousel.domain.libraries import DEFAULT_LIBRARY, library_name_problem

if TYPE_CHECKING:
    from carousel.config import Settings
    from carousel.domain.clock import Clock
    from hsm_adapters.base import HsmAdapter

SIMULATED = "simulated"


class LibrarySettings(BaseModel):
    """One library: its adapter and the adapter's options (a simulated library's over the embedded
    defaults, key by key, as the service's own `adapter_options`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    adapter: str = SIMULATED
    adapter_options: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _simulated_options_onto_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("adapter", SIMULATED) != SIMULATED:
            return data
        from carousel.config import simulated_options_onto_defaults  # noqa: PLC0415 (the package's)

        given = data.get("adapter_options", {})
        if not isinstance(given, Mapping):
            return data  # not a table: the field's own validation names it
        return {**data, "adapter_options": simulated_options_onto_defaults(given)}


def check_library_names(libraries: Mapping[str, LibrarySettings]) -> Mapping[str, LibrarySettings]:
    for name in libraries:
        problem = library_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
    return libraries


def libraries_of(settings: Settings) -> dict[str, LibrarySettings]:
    """Every library the settings name, by name: `libraries`, or the one `default` of `adapter`."""
    if settings.libraries:
        return dict(settings.libraries)
    return {
        DEFAULT_LIBRARY: LibrarySettings.model_construct(
            adapter=settings.adapter, adapter_options=settings.adapter_options
        )
    }


def sole_library(settings: Settings) -> tuple[str, LibrarySettings]:
    """The one library a service process runs; a ConfigError when the settings name several."""
    libraries = libraries_of(settings)
    if len(libraries) > 1:
        raise ConfigError(
            f"setting libraries: {len(libraries)} libraries ({', '.join(sorted(libraries))}), but this"
            " command works on one library (carousel serve and carousel scheduler run several)"
        )
    return next(iter(libraries.items()))


def sole_adapter(settings: Settings, clock: Clock) -> HsmAdapter:
    """The adapter of the one library a process runs (ConfigError naming the library when it cannot be
    built, or when the settings name several)."""
    from hsm_adapters.registry import build_adapter  # noqa: PLC0415 (adapters load when a process needs one)

    name, library = sole_library(settings)
    try:
        return build_adapter(library.adapter, library.adapter_options, clock)
    except ConfigError as exc:
        raise ConfigError(f"library {name}: {exc}" if settings.libraries else str(exc)) from exc


def build_libraries(settings: Settings, clock: Clock) -> dict[str, HsmAdapter]:
    """Every library's adapter, by name, in the settings' order (a ConfigError naming the library that cannot
    be built; those built before it are closed)."""
    from hsm_adapters.registry import build_adapter  # noqa: PLC0415 (adapters load when a process needs one)

    built: dict[str, HsmAdapter] = {}
    try:
        for name, library in libraries_of(settings).items():
            try:
                built[name] = build_adapter(library.adapter, library.adapter_options, clock)
            except ConfigError as exc:
                raise ConfigError(f"library {name}: {exc}" if settings.libraries else str(exc)) from exc
    except ConfigError:
        for adapter in built.values():
            adapter.close()
        raise
    return built


def chosen_library(settings: Settings, name: str | None, *, field: str = "library") -> str | None:
    """A library a caller named (None: the whole site), checked against the settings' libraries: an unknown
    name is bad input naming `field`."""
    if name is None:
        return None
    libraries = libraries_of(settings)
    if name not in libraries:
        raise InvalidInput(
            f"{field}: {name[:64]!r} is not a library of this site (its libraries: {', '.join(libraries)})",
            field=field,
        )
    return name


def library_adapter(settings: Settings, name: str, clock: Clock) -> HsmAdapter:
    """The adapter of the library `name` (one of the settings'), built alone."""
    from hsm_adapters.registry import build_adapter  # noqa: PLC0415 (adapters load when a process needs one)

    library = libraries_of(settings)[name]
    try:
        return build_adapter(library.adapter, library.adapter_options, clock)
    except ConfigError as exc:
        raise ConfigError(f"library {name}: {exc}" if settings.libraries else str(exc)) from exc
