"""Small builders shared by the simulated library's tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from hsm_adapters.base import Batch, BatchFile, EventKind
from hsm_adapters.simulated.catalogue import Catalogue, CatalogueEntry, generate_catalogue
from hsm_adapters.simulated.library import SimEvent
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile


def physics_for(profile: str = "lto9", **overrides: object) -> TapePhysics:
    base = load_profile(profile)
    return TapePhysics(dataclasses.replace(base, **overrides))


def catalogue_for(
    physics: TapePhysics,
    *,
    cartridges: int = 6,
    files: int = 10,
    size: int = 2_000_000_000,
    layout: str = "spread",
    seed: int = 1,
) -> Catalogue:
    return generate_catalogue(seed, cartridges, files, f"fixed:{size}", physics.profile, layout=layout)


def batch_of(
    key: str, files: Iterable[CatalogueEntry], service_class: str = "default", key_prefix: str = ""
) -> Batch:
    """A batch of one tape's files in the given order; each file's key is key_prefix + its path."""
    chosen = tuple(files)
    return Batch(
        key=key,
        tape=chosen[0].tape,
        files=tuple(BatchFile(key_prefix + e.path, e.path, e.position_bytes, e.size_bytes) for e in chosen),
        service_class=service_class,
    )


def of_kind(events: Sequence[SimEvent], kind: EventKind) -> list[SimEvent]:
    return [e for e in events if e.kind is kind]


def staged_paths(events: Sequence[SimEvent]) -> list[str | None]:
    return [e.path for e in events if e.kind is EventKind.FILE_STAGED]


def serialise(events: Sequence[SimEvent]) -> str:
    """One line per event, floats in full: equal logs are equal strings."""
    return "\n".join(
        f"{e.t!r} {e.kind} {e.tape} {e.drive} {e.file_key} {e.batch_key} {e.bytes} {e.reason} {e.retryable}"
        for e in events
    )
