"""The workloads the policies are compared on: generators with fixed seeds, so every trace is reproducible
to the byte (`carousel workload NAME --out T.csv` writes one).

- star_batch (9 × t9940b): a STAR-like bulk restore: 50,000 single-file requests for files drawn at random
  from 2,000 cartridges (STAR's 2006 file sizes), all submitted within ten minutes;
- light_load (9 × t9940b): the same library under a trickle: 1,000 single-file requests, one every 3 minutes
  on average (Poisson), about a tenth of what the drives serve at one file per mount;
- lto_modern (16 × lto9): WLCG-style bulk requests: 250 requests of 200 files over 24 hours (uniform
  arrivals), each from a dataset spread over a few of 1,000 LTO-9 cartridges, three groups (50/30/20 % of
  requests), one request in ten with priority 1;
- zipf_batch (12 × lto9): a popularity-skewed bulk restore: 20,000 single-file requests within ten minutes
  whose cartridges, among 3,000, follow a Zipf law (exponent 1.1: the hottest cartridge holds about 3,000 of
  them, about 2,000 cartridges hold any, most of those one to three), log-normal sizes (median 1 GB, σ 1),
  each cartridge's files at random places over its length. Its many one-file mounts make the robot a
  resource that binds as much as the drives do;
- two_libraries (a site: `lto9` of 8 × lto9 and `lto7` of 4 × lto7, docs/decisions.md §17): 120 bulk
  requests of 100 files (fewer when the dataset's cartridges hold fewer) within the first hour from three
  groups (50/30/20 % of requests), each dataset spread over a few cartridges of either library; 300 LTO-9
  and 150 LTO-7 cartridges whose ids repeat between the libraries (T00001 is in both), as tape ids are
  unique per library only.

`scale` shrinks a workload (requests and cartridges together) for tests; the full size is scale 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from carousel.domain.errors import ConfigError
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.replay.site import LibrarySpec
from carousel.replay.trace import Trace, TraceRow, make_trace
from hsm_adapters.simulated.catalogue import Catalogue, CatalogueEntry, generate_catalogue
from hsm_adapters.simulated.profiles import load_profile


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    profile: str
    drives: int
    description: str
    generate: Callable[[float], Trace]
    libraries: tuple[LibrarySpec, ...] = ()  # a site of several libraries (profile and drives: the first's)


def _scaled(full: int, scale: float, least: int) -> int:
    if not 0 < scale <= 1:
        raise ConfigError(f"workload scale must lie in (0, 1], got {scale}")
    return max(least, round(full * scale))


def _star_catalogue(seed: int, cartridges: int) -> Catalogue:
    # 500 files of STAR's 2006 sizes (about 145 GB) on each 200 GB cartridge, end to end
    return generate_catalogue(seed, cartridges, 500, "star2006", load_profile("t9940b"))


def _entry_row(
    entry: CatalogueEntry,
    arrival: float,
    request: str,
    group: str,
    *,
    priority: int = 0,
    library: str = DEFAULT_LIBRARY,
) -> TraceRow:
    """The trace row that asks for one catalogue file."""
    return TraceRow(
        arrival_s=round(float(arrival), 3),
        request=request,
        path=entry.path,
        size_bytes=entry.size_bytes,
        tape=entry.tape,
        position_bytes=entry.position_bytes,
        group=group,
        priority=priority,
        library=library,
    )


def _rows_for(catalogue: Catalogue, picks: np.ndarray, arrivals: np.ndarray, group: str) -> list[TraceRow]:
    paths = list(catalogue)
    return [
        _entry_row(catalogue[paths[index]], arrival, f"r{number:06d}", group)
        for number, (index, arrival) in enumerate(
            zip(picks.tolist(), arrivals.tolist(), strict=True), start=1
        )
    ]


def star_batch(scale: float = 1.0) -> Trace:
    seed = 2006
    cartridges = _scaled(2_000, scale, 2)
    requests = _scaled(50_000, scale, 1)
    catalogue = _star_catalogue(seed, cartridges)
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(catalogue), size=requests, replace=False)
    arrivals = np.sort(rng.uniform(0.0, 600.0, size=requests))
    return make_trace(_rows_for(catalogue, picks, arrivals, "star"), f"workload star_batch (scale {scale:g})")


def light_load(scale: float = 1.0) -> Trace:
    seed = 2007
    cartridges = _scaled(2_000, scale, 2)
    requests = _scaled(1_000, scale, 1)
    catalogue = _star_catalogue(seed, cartridges)
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(catalogue), size=requests, replace=False)
    arrivals = np.cumsum(rng.exponential(180.0, size=requests))
    return make_trace(_rows_for(catalogue, picks, arrivals, "star"), f"workload light_load (scale {scale:g})")


LTO_GROUPS = ("atlas", "cms", "lhcb")
LTO_GROUP_SHARES = (0.5, 0.3, 0.2)


def lto_modern(scale: float = 1.0) -> Trace:
    seed = 2024
    cartridges = _scaled(1_000, scale, 4)
    requests = _scaled(250, scale, 2)
    files_per_request = 200
    profile = load_profile("lto9")
    # 80 catalogued files spread over each 18 TB cartridge, as datasets sit among other data
    catalogue = generate_catalogue(seed, cartridges, 80, "lognormal:3e9:0.5", profile, layout="spread")
    paths = list(catalogue)
    by_tape = [np.arange(n * 80, (n + 1) * 80) for n in range(cartridges)]  # rows are by tape, then position
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0.0, 86_400.0, size=requests))
    rows: list[TraceRow] = []
    for number, arrival in enumerate(arrivals.tolist(), start=1):
        spread = int(min(cartridges, max(1, rng.geometric(1 / 5))))
        tapes = rng.choice(cartridges, size=spread, replace=False)
        pool = np.concatenate([by_tape[t] for t in tapes.tolist()])
        picks = rng.choice(pool, size=min(files_per_request, len(pool)), replace=False)
        group = LTO_GROUPS[int(rng.choice(len(LTO_GROUPS), p=LTO_GROUP_SHARES))]
        priority = 1 if rng.random() < 0.1 else 0
        rows.extend(
            _entry_row(catalogue[paths[index]], arrival, f"r{number:04d}", group, priority=priority)
            for index in sorted(picks.tolist())
        )
    return make_trace(rows, f"workload lto_modern (scale {scale:g})")


ZIPF_EXPONENT = 1.1


def zipf_batch(scale: float = 1.0) -> Trace:
    seed = 2018
    cartridges = _scaled(3_000, scale, 2)
    requests = _scaled(20_000, scale, 1)
    capacity = load_profile("lto9").capacity_bytes
    rng = np.random.default_rng(seed)
    weights = np.arange(1, cartridges + 1, dtype=np.float64) ** -ZIPF_EXPONENT
    per_tape = np.bincount(
        rng.choice(cartridges, size=requests, p=weights / weights.sum()), minlength=cartridges
    )
    sizes = np.maximum(1, rng.lognormal(np.log(1e9), 1.0, size=requests)).astype(np.int64)
    arrivals = rng.uniform(0.0, 600.0, size=requests)
    rows: list[TraceRow] = []
    first = 0
    for tape, count in enumerate(per_tape.tolist()):
        if not count:
            continue
        tape_sizes = sizes[first : first + count]
        # the files at uniformly random, non-overlapping places: the free space split into count + 1 gaps
        gaps = rng.exponential(size=count + 1)
        gaps *= (capacity - int(tape_sizes.sum())) / gaps.sum()
        positions = np.cumsum(np.floor(gaps[:count]).astype(np.int64)) + np.cumsum(tape_sizes) - tape_sizes
        for index in range(count):
            rows.append(
                TraceRow(
                    arrival_s=round(float(arrivals[first + index]), 3),
                    request=f"r{first + index + 1:06d}",
                    path=f"/zipf/Z{tape + 1:05d}/{index + 1}.root",
                    size_bytes=int(tape_sizes[index]),
                    tape=f"Z{tape + 1:05d}",
                    position_bytes=int(positions[index]),
                    group="zipf",
                )
            )
        first += count
    return make_trace(rows, f"workload zipf_batch (scale {scale:g})")


TWO_LIBRARIES = (LibrarySpec("lto9", "lto9", 8), LibrarySpec("lto7", "lto7", 4))
TWO_LIBRARY_CARTRIDGES = (300, 150)


def two_libraries(scale: float = 1.0) -> Trace:
    seed = 2025
    requests = _scaled(120, scale, 3)
    files_per_request = 100
    rng = np.random.default_rng(seed)
    # every library's cartridges: (library, catalogue rows of one cartridge), 40 files spread over each
    pool: list[tuple[str, list[TraceRow]]] = []
    for number, (spec, full) in enumerate(zip(TWO_LIBRARIES, TWO_LIBRARY_CARTRIDGES, strict=True)):
        cartridges = _scaled(full, scale, 2)
        catalogue = generate_catalogue(
            seed + number, cartridges, 40, "lognormal:3e9:0.5", load_profile(spec.profile), layout="spread"
        )
        entries = [catalogue[path] for path in catalogue]
        for tape in range(cartridges):
            pool.append(
                (
                    spec.name,
                    [
                        TraceRow(0.0, "", f"/{spec.name}{e.path}", e.size_bytes, e.tape, e.position_bytes)
                        for e in entries[tape * 40 : (tape + 1) * 40]
                    ],
                )
            )
    arrivals = np.sort(rng.uniform(0.0, 3_600.0, size=requests))
    rows: list[TraceRow] = []
    for number, arrival in enumerate(arrivals.tolist(), start=1):
        spread = int(min(len(pool), max(1, rng.geometric(1 / 4))))
        tapes = rng.choice(len(pool), size=spread, replace=False).tolist()
        candidates = [(pool[t][0], row) for t in tapes for row in pool[t][1]]
        picks = rng.choice(len(candidates), size=min(files_per_request, len(candidates)), replace=False)
        group = LTO_GROUPS[int(rng.choice(len(LTO_GROUPS), p=LTO_GROUP_SHARES))]
        for index in sorted(picks.tolist()):
            library, entry = candidates[index]
            rows.append(_entry_row(entry, arrival, f"r{number:04d}", group, library=library))
    return make_trace(rows, f"workload two_libraries (scale {scale:g})")


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "star_batch", "t9940b", 9, "STAR-like bulk restore, 50,000 files on 2,000 cartridges", star_batch
        ),
        Workload(
            "light_load", "t9940b", 9, "a trickle of single-file requests, far below capacity", light_load
        ),
        Workload("lto_modern", "lto9", 16, "WLCG-style bulk requests on LTO-9, three groups", lto_modern),
        Workload(
            "zipf_batch",
            "lto9",
            12,
            "a bulk restore of Zipf-popular cartridges, log-normal sizes",
            zipf_batch,
        ),
        Workload(
            "two_libraries",
            "lto9",
            8,
            "a site of two libraries (LTO-9 × 8, LTO-7 × 4), three groups over both",
            two_libraries,
            libraries=TWO_LIBRARIES,
        ),
    )
}


def workload(name: str) -> Workload:
    found = WORKLOADS.get(name)
    if found is None:
        raise ConfigError(f"unknown workload {name!r}: available are {', '.join(sorted(WORKLOADS))}")
    return found
