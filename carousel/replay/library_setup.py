"""How the simulated library runs under each policy in a replay, and the `--library FILE` that changes it.

Each policy declares the library side of the system it comes from (`library_needs`, next to the policy in
policies/*.py, in the domain's terms: carousel.domain.library_needs); `policy_setup` maps it to the simulated
library's set-up. A policy that declares nothing (a plug-in) gets the tape-ordered library in position order.

A library file (TOML) may set, all optional: `robots`, `dismount_delay_s`, `discipline` ("fifo" or
"tape_ordered"), `queue_depth` (a table: class of service -> files), `read_order` ("position" or
"shortest_locate"), `merge_batches` (true or false), `new_media_fraction`, and a `[faults]` table
(docs/simulated-library.md). Keys it sets replace the policy's.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from carousel.domain.errors import ConfigError
from carousel.domain.library_needs import HsmDiscipline, HsmReadOrder, LibraryNeeds
from hsm_adapters.simulated.builder import LibrarySetup
from hsm_adapters.simulated.faults import fault_plan_from_mapping
from hsm_adapters.simulated.library import Discipline
from hsm_adapters.simulated.read_order import ReadOrderName

_DISCIPLINES = {HsmDiscipline.FIFO: Discipline.FIFO, HsmDiscipline.TAPE_ORDERED: Discipline.TAPE_ORDERED}
_READ_ORDERS: dict[HsmReadOrder, ReadOrderName] = {
    HsmReadOrder.POSITION: "position",
    HsmReadOrder.SHORTEST_LOCATE: "shortest_locate",
}


def policy_setup(needs: LibraryNeeds) -> LibrarySetup:
    """The simulated library a policy's declared needs ask for."""
    return LibrarySetup(
        _DISCIPLINES[needs.discipline],
        queue_depth=dict(needs.queue_depth),
        read_order=_READ_ORDERS[needs.read_order],
        merge_batches=needs.merge_batches,
    )


class LibraryFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    robots: Annotated[int, Field(ge=1)] | None = None
    dismount_delay_s: Annotated[float, Field(ge=0)] | None = None
    discipline: Discipline | None = None
    queue_depth: dict[str, Annotated[int, Field(ge=1)]] | None = None
    read_order: ReadOrderName | None = None
    merge_batches: bool | None = None
    new_media_fraction: Annotated[float, Field(ge=0, le=1)] | None = None
    faults: dict[str, Any] | None = None


def load_library_file(path: str | Path) -> LibraryFile:
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the library file: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    try:
        return LibraryFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "(file)"
        raise ConfigError(f"{file}: key {key!r}: {first['msg']}") from exc


def apply_library_file(
    setup: LibrarySetup, changes: LibraryFile | None, *, source: str = "library"
) -> LibrarySetup:
    if changes is None:
        return setup
    faults = fault_plan_from_mapping(changes.faults, source=f"{source} [faults]") if changes.faults else None
    return LibrarySetup(
        discipline=changes.discipline or setup.discipline,
        queue_depth=dict(changes.queue_depth) if changes.queue_depth is not None else setup.queue_depth,
        read_order=changes.read_order or setup.read_order,
        merge_batches=setup.merge_batches if changes.merge_batches is None else changes.merge_batches,
        robots=changes.robots or setup.robots,
        dismount_delay_s=(
            changes.dismount_delay_s if changes.dismount_delay_s is not None else setup.dismount_delay_s
        ),
        new_media_fraction=(
            changes.new_media_fraction if changes.new_media_fraction is not None else setup.new_media_fraction
        ),
        faults=faults or setup.faults,
    )
