"""Snapshot builders for policy tests, and a hypothesis strategy of snapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from carousel.domain.planning import (
    GroupDemand,
    GroupUsage,
    LibraryCosts,
    LibraryView,
    Snapshot,
    TapeDemand,
    TapeInFlight,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)
MB = 10**6
GB = 10**9

# a 9940B-like drive: 30 MB/s, costly mounts
COSTS = LibraryCosts(
    mount_s=29.0,
    unmount_s=74.0,
    rate_bytes_per_s=30 * MB,
    overhead_s=3.0,
    locate_s=((1, 41.0), (8, 11.5), (64, 4.3), (4096, 3.1)),
)


def tape(
    name: str,
    files: int,
    *,
    size: int = 100 * MB,
    age_s: float = 0.0,
    priority: int = 0,
    group: str = "default",
    groups: tuple[GroupDemand, ...] | None = None,
    service_class: str = "default",
    retries: int = 0,
    now: datetime = T0,
) -> TapeDemand:
    oldest = now - timedelta(seconds=age_s)
    return TapeDemand(
        tape=name,
        files=files,
        bytes=files * size,
        oldest=oldest,
        max_priority=priority,
        service_class=service_class,
        groups=groups or (GroupDemand(group, files, files * size, oldest=oldest, max_priority=priority),),
        retries=retries,
    )


def busy(name: str, files: int = 1, group: str = "default", size: int = 100 * MB) -> TapeInFlight:
    return TapeInFlight(name, files, (GroupDemand(group, files, files * size),))


def snapshot(
    *tapes: TapeDemand,
    drives: int = 4,
    online: bool = True,
    in_flight: tuple[TapeInFlight, ...] = (),
    mounted: tuple[str, ...] = (),
    slots: dict[str, int] | None = None,
    usage: dict[str, float] | None = None,
    costs: LibraryCosts | None = COSTS,
    now: datetime = T0,
) -> Snapshot:
    held = {t.tape for t in in_flight}
    library = LibraryView(
        online=online,
        drives_total=drives,
        drives_free=max(0, drives - len(held)),
        queue_slots=slots or {},
        mounted_tapes=mounted,
        costs=costs,
    )
    return Snapshot(
        now=now,
        tapes=tapes,
        library=library,
        in_flight=sum(t.files for t in in_flight),
        in_flight_tapes=tuple(sorted(in_flight, key=lambda t: t.tape)),
        usage=tuple(GroupUsage(g, s) for g, s in sorted((usage or {}).items())),
    )


@st.composite
def snapshots(draw: st.DrawFn, groups: tuple[str, ...] = ("atlas", "cms", "star")) -> Snapshot:
    """Random queues: up to 30 tapes, some of them in flight or mounted, a few groups and priorities."""
    count = draw(st.integers(min_value=0, max_value=30))
    names = [f"T{n:03d}" for n in range(count)]
    tapes = []
    for name in names:
        files = draw(st.integers(min_value=1, max_value=500))
        tapes.append(
            tape(
                name,
                files,
                size=draw(st.integers(min_value=1, max_value=2 * GB)),
                age_s=draw(st.floats(min_value=0, max_value=50_000)),
                priority=draw(st.integers(min_value=0, max_value=3)),
                group=draw(st.sampled_from(groups)),
                retries=draw(st.sampled_from([0, 0, 0, 1, files])),
            )
        )
    in_flight_names = draw(st.lists(st.sampled_from(names), unique=True, max_size=8)) if names else []
    extra = draw(st.lists(st.sampled_from(["X1", "X2", "X3"]), unique=True, max_size=3))
    in_flight = tuple(
        busy(n, draw(st.integers(min_value=1, max_value=50)), draw(st.sampled_from(groups)))
        for n in [*in_flight_names, *extra]
    )
    mounted = tuple(draw(st.lists(st.sampled_from(names), unique=True, max_size=3))) if names else ()
    usage = {g: draw(st.floats(min_value=0, max_value=1e6)) for g in groups}
    return snapshot(
        *tapes,
        drives=draw(st.integers(min_value=1, max_value=12)),
        in_flight=in_flight,
        mounted=mounted,
        usage=usage,
        costs=draw(st.sampled_from([COSTS, None])),
    )
