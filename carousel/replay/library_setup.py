"""How the simulated library runs under each policy in a replay, and the `--library FILE` that changes it.

Each baseline runs the way its system ran:

- fifo: FIFO discipline, no depth bound: files are served in the order they arrive, a free drive mounts the
  cartridge of the next one (XRootD's random pattern against an HSM that does not regroup);
- star2006: FIFO discipline with STAR's depth per class of service (30 / 20): the DataCarousel's jobs wait
  in line beyond it, as they did at the daemon in front of HPSS;
- cta: tape-ordered discipline, no depth bound, reads in shortest-locate-first order: CTA decides the
  mounts itself (the policy) and orders the reads on the tape (RAO);
- carousel: as cta: the policy decides the mounts, the library reads each mount in shortest-locate order.

Another policy (a plug-in) gets the tape-ordered library in position order.

A library file (TOML) may set, all optional: `robots`, `dismount_delay_s`, `discipline` ("fifo" or
"tape_ordered"), `queue_depth` (a table: class of service -> files), `read_order` ("position" or
"shortest_locate"), `new_media_fraction`, and a `[faults]` table (docs/simulated-library.md). Keys it sets
replace the policy's defaults above.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from carousel.domain.errors import ConfigError
from hsm_adapters.simulated.builder import LibrarySetup
from hsm_adapters.simulated.faults import fault_plan_from_mapping
from hsm_adapters.simulated.library import Discipline
from hsm_adapters.simulated.read_order import ReadOrderName
from policies.star2006 import Star2006Options


def default_setup(policy: str, options: Mapping[str, Any]) -> LibrarySetup:
    if policy == "fifo":
        return LibrarySetup(Discipline.FIFO)
    if policy == "star2006":
        own = {k: v for k, v in options.items() if k != "fair_share"}
        return LibrarySetup(Discipline.FIFO, queue_depth=dict(Star2006Options.model_validate(own).depth))
    if policy in ("cta", "carousel"):
        return LibrarySetup(Discipline.TAPE_ORDERED, read_order="shortest_locate")
    return LibrarySetup(Discipline.TAPE_ORDERED)


class LibraryFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    robots: Annotated[int, Field(ge=1)] | None = None
    dismount_delay_s: Annotated[float, Field(ge=0)] | None = None
    discipline: Discipline | None = None
    queue_depth: dict[str, Annotated[int, Field(ge=1)]] | None = None
    read_order: ReadOrderName | None = None
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
        robots=changes.robots or setup.robots,
        dismount_delay_s=(
            changes.dismount_delay_s if changes.dismount_delay_s is not None else setup.dismount_delay_s
        ),
        new_media_fraction=(
            changes.new_media_fraction if changes.new_media_fraction is not None else setup.new_media_fraction
        ),
        faults=faults or setup.faults,
    )
