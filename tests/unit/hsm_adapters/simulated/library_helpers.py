"""Small builders shared by the simulated library's tests."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence

from hsm_adapters.base import Batch, BatchFile, EventKind, Health
from hsm_adapters.simulated.catalogue import Catalogue, CatalogueEntry, generate_catalogue
from hsm_adapters.simulated.faults import FaultPlan
from hsm_adapters.simulated.library import Library, SimEvent
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


ENDINGS = (EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED)


def run_workload(
    seed: int,
    discipline: str,
    drives: int,
    depth: int | None,
    cancel_share: float,
    faults: FaultPlan | None = None,
) -> tuple[list[SimEvent], list[str]]:
    """Random one-tape batches arriving over time, some cancels; each submission's file keys are new.
    Submissions refused while the library is offline are left out."""
    physics = physics_for("lto8")
    catalogue = catalogue_for(physics, cartridges=8, files=12, seed=seed)
    rng = random.Random(seed)
    library = Library(
        catalogue,
        physics,
        drives=drives,
        robots=rng.randint(1, 2),
        discipline=discipline,
        queue_depth=None if depth is None else {"default": depth},
        faults=faults,
    )
    t = 0.0
    keys: list[str] = []
    events: list[SimEvent] = []
    for number in range(40):
        t += rng.expovariate(1 / 120)
        tape = rng.choice(catalogue.tapes)
        files = rng.sample(catalogue.on_tape(tape), rng.randint(1, 5))
        events += library.advance_to(t)
        if library.health(t) is Health.OFFLINE:
            continue
        library.submit(batch_of(f"b{number}", files, key_prefix=f"b{number}:"), t)
        keys.extend(f"b{number}:{f.path}" for f in files)
        if rng.random() < cancel_share:
            library.cancel(rng.sample(keys, min(3, len(keys))), t)
    return events + library.run_until_idle(), keys


ENDINGS = (EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED)


def check_recall_log(events: list[SimEvent], submitted: list[str]) -> None:
    """Time runs forward; each submitted key ends once; a cartridge is in one drive at a time, a drive reads
    one file at a time from the cartridge it holds, never faster than the native rate."""
    times = [e.t for e in events]
    assert times == sorted(times)
    endings = [e.file_key for e in events if e.kind in ENDINGS]
    assert sorted(endings) == sorted(submitted)
    rate = physics_for("lto8").profile.rate_bytes_per_s
    reading: dict[str | None, SimEvent] = {}
    holding: dict[str | None, str | None] = {}  # drive -> the cartridge it holds
    for event in events:
        if event.kind is EventKind.MOUNTED:
            assert event.drive not in holding and event.tape not in holding.values(), "mounted twice"
            holding[event.drive] = event.tape
        elif event.kind is EventKind.UNMOUNTED:
            assert holding.pop(event.drive) == event.tape
            # only a drive going down drops the file it was reading
            assert event.drive not in reading or event.reason == "drive down"
            reading.pop(event.drive, None)
        elif event.kind is EventKind.FILE_STARTED:
            assert holding.get(event.drive) == event.tape, "read from a cartridge the drive does not hold"
            assert event.drive not in reading, "a drive started a file while reading another"
            reading[event.drive] = event
        elif event.kind is EventKind.FILE_STAGED:
            start = reading.pop(event.drive)
            assert start.file_key == event.file_key
            assert event.bytes / (event.t - start.t) <= rate * (1 + 1e-9)
        elif event.kind is EventKind.FILE_FAILED and event.drive in reading:  # a read error
            assert reading.pop(event.drive).file_key == event.file_key
        elif event.kind is EventKind.FILE_CANCELLED:
            assert all(e.file_key != event.file_key for e in reading.values()), "cancelled while being read"
    assert not reading  # nothing is left half read
    assert not holding  # every cartridge went back to its slot
