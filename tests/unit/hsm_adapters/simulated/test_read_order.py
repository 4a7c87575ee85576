"""The library's access order (read_order = "shortest_locate"), against the simulated library itself and
against the best order found by trying every one on small batches."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linear_sum_assignment

from carousel.domain.clock import ManualClock
from hsm_adapters.base import Batch, BatchFile, EventKind, HsmAdapter
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter, parse_options
from hsm_adapters.simulated.physics import TapePhysics, shortest_locate_first
from hsm_adapters.simulated.profiles import load_profile
from hsm_adapters.simulated.read_order import least_locate_order, locate_order, order_from, path_locate_s


def library(clock: ManualClock, **options: object) -> SimulatedAdapter:
    return build_simulated_adapter(
        {
            **options,
            "profile": "lto7",
            "drives": 1,
            "catalogue": {
                "generate": {
                    "seed": 11,
                    "cartridges": 1,
                    "files_per_cartridge": 30,
                    "size_model": "fixed:2e9",
                    "layout": "spread",
                }
            },
        },
        clock,
    )


def whole_tape(adapter: SimulatedAdapter) -> Batch:
    catalogue = adapter.library.catalogue
    entries = catalogue.on_tape(catalogue.tapes[0])
    return Batch(
        key="b",
        tape=entries[0].tape,
        files=tuple(BatchFile(str(n), e.path, e.position_bytes, e.size_bytes) for n, e in enumerate(entries)),
    )


def read_order_and_end(adapter: HsmAdapter, batch: Batch, clock: ManualClock) -> tuple[list[str], float]:
    adapter.submit(batch)
    clock.advance(10**6)
    events = adapter.poll_events()
    started = [e.file_key for e in events if e.kind is EventKind.FILE_STARTED]
    last = max(e.at for e in events if e.kind is EventKind.FILE_STAGED)
    return [k for k in started if k is not None], (last - clock.now()).total_seconds() + 10**6


def test_batches_reach_the_library_in_locate_order_and_finish_sooner():
    plain_clock, sltf_clock = ManualClock(), ManualClock()
    plain = library(plain_clock)
    sltf = library(sltf_clock, read_order="shortest_locate")
    batch = whole_tape(plain)

    plain_order, plain_end = read_order_and_end(plain, batch, plain_clock)
    sltf_order, sltf_end = read_order_and_end(sltf, batch, sltf_clock)

    assert plain_order == [f.key for f in batch.files]  # position order, as handed over
    assert sltf_order == [f.key for f in locate_order(sltf.library.physics, batch).files]
    assert sltf_order != plain_order
    assert sltf_end < plain_end


def test_one_file_batches_pass_unchanged_and_read_alike_in_either_order():
    plain_clock, sltf_clock = ManualClock(), ManualClock()
    plain = library(plain_clock)
    sltf = library(sltf_clock, read_order="shortest_locate")
    batch = whole_tape(plain)
    single = Batch(key="one", tape=batch.tape, files=batch.files[:1])
    assert locate_order(plain.library.physics, single) is single
    assert isinstance(sltf, HsmAdapter)
    assert sltf.capacity() == plain.capacity()
    assert read_order_and_end(sltf, single, sltf_clock) == read_order_and_end(plain, single, plain_clock)


def test_the_adapter_option_read_order_reads_in_locate_order_and_defaults_to_position():
    """adapter_options.read_order = "shortest_locate" (what the settings give the service, and what the
    replay sets for the policies that declare it) reads each batch as `locate_order` orders it; the default
    keeps carousel's head order."""
    clock = ManualClock()
    by_option = library(clock, read_order="shortest_locate")
    batch = whole_tape(by_option)
    option_order, _ = read_order_and_end(by_option, batch, clock)
    assert option_order == [f.key for f in locate_order(by_option.library.physics, batch).files]
    assert option_order != [f.key for f in batch.files]
    assert parse_options({}).read_order == "position"


def locates(physics: TapePhysics, positions: list[int], sizes: list[int], order: list[int]) -> float:
    return path_locate_s(physics, positions, sizes, order)


def _best(physics: TapePhysics, positions: list[int], sizes: list[int]) -> float:
    """The least locates over every order, from the load point."""
    starts = np.asarray(positions, dtype=np.float64)
    from_load = physics.locate_many(0.0, starts).tolist()
    between = physics.locate_many((starts + np.asarray(sizes))[:, None], starts[None, :]).tolist()
    return min(
        from_load[o[0]] + sum(between[a][b] for a, b in itertools.pairwise(o))
        for o in itertools.permutations(range(len(positions)))
    )


def test_the_order_is_a_permutation_never_dearer_than_greedy_and_near_the_best_on_small_batches():
    """300 random batches of 2-7 files on an LTO-9 cartridge (280 wraps), every order tried: the library's
    order is the best one in most, and pays at most 1 % more than the best in all; greedy pays more."""
    physics = TapePhysics(load_profile("lto9"))
    capacity = physics.profile.capacity_bytes
    rng = np.random.default_rng(3)
    best_s = ours_s = greedy_s = 0.0
    best_found = 0
    for key in range(300):
        count = int(rng.integers(2, 8))
        positions = sorted(rng.integers(0, capacity - 10**11, size=count).tolist())
        sizes = rng.integers(10**8, 10**10, size=count).tolist()
        files = tuple(
            BatchFile(str(i), f"/f{i}", p, s) for i, (p, s) in enumerate(zip(positions, sizes, strict=True))
        )
        ordered = locate_order(physics, Batch(key=str(key), tape="T", files=files))
        order = [int(f.key) for f in ordered.files]
        assert sorted(order) == list(range(count))
        best = _best(physics, positions, sizes)
        ours = locates(physics, positions, sizes, order)
        greedy = locates(physics, positions, sizes, shortest_locate_first(physics, 0, positions, sizes))
        assert best - 1e-9 <= ours <= greedy + 1e-9
        best_found += ours <= best + 1e-9
        best_s, ours_s, greedy_s = best_s + best, ours_s + ours, greedy_s + greedy
    assert best_found >= 240
    assert ours_s <= 1.01 * best_s
    assert greedy_s > 1.02 * best_s


def test_on_a_hot_cartridge_the_order_is_near_the_assignment_that_bounds_every_order():
    """600 files over a whole LTO-9 cartridge: the patched assignment pays within 1 % of the least
    assignment of successors (which every read order's locates are at least), greedy at least 5 % more."""
    physics = TapePhysics(load_profile("lto9"))
    rng = np.random.default_rng(18)
    count = 600
    sizes = rng.integers(10**8, 10**10, size=count)
    gaps = rng.exponential(size=count + 1)
    gaps *= (physics.profile.capacity_bytes - int(sizes.sum())) / gaps.sum()
    starts = np.cumsum(np.floor(gaps[:count]).astype(np.int64)) + np.cumsum(sizes) - sizes
    positions, size_list = starts.tolist(), sizes.tolist()

    cost = np.zeros((count + 1, count + 1))
    ends = starts + sizes
    cost[:count, :count] = physics.locate_many(ends[:, None].astype(float), starts[None, :].astype(float))
    cost[count, :count] = physics.locate_many(0.0, starts.astype(float))
    np.fill_diagonal(cost, np.inf)
    rows, columns = linear_sum_assignment(cost)
    assignment = float(cost[rows, columns].sum())

    order = least_locate_order(physics, positions, size_list)
    assert sorted(order) == list(range(count))
    ours = locates(physics, positions, size_list, order)
    greedy = locates(physics, positions, size_list, shortest_locate_first(physics, 0, positions, size_list))
    assert assignment - 1e-6 <= ours <= 1.01 * assignment
    assert greedy >= 1.05 * assignment


def test_a_batch_for_a_cartridge_being_read_joins_its_pass_read_from_the_head_once_each():
    """Half the cartridge's files, then, while the drive reads them, the other half: the library reads the
    unread files of the first batch and the second batch in one pass, ordered from where the head is
    (`order_from`), every file once (`merge_batches`); a library that keeps each batch a run of its own (the
    default) reads all of them too, in more locate seconds."""
    results = {}
    for name in ("merged", "alone"):
        clock = ManualClock()
        adapter = library(clock, read_order="shortest_locate", merge_batches=name == "merged")
        batch = whole_tape(adapter)
        first = Batch(key="first", tape=batch.tape, files=batch.files[::2])
        second = Batch(key="second", tape=batch.tape, files=batch.files[1::2])
        adapter.submit(first)
        clock.advance(300)  # mounted (robot and load) and a few files read
        before = adapter.poll_events()
        started = [e.file_key for e in before if e.kind is EventKind.FILE_STARTED]
        assert 0 < len(started) < len(first.files)
        head = adapter.library._drives[0].head  # the end of the file being read
        adapter.submit(second)
        clock.advance(10**6)
        after = adapter.poll_events()
        later = [e.file_key for e in after if e.kind is EventKind.FILE_STARTED]
        staged = [e.file_key for e in before + after if e.kind is EventKind.FILE_STAGED]
        assert sorted(staged, key=int) == [f.key for f in batch.files]  # every file once, none lost
        assert sorted(started + later, key=int) == [f.key for f in batch.files]
        unread = [f for f in batch.files if f.key not in set(started)]
        physics = adapter.library.physics
        positions = [f.position_bytes for f in unread]
        sizes = [f.size_bytes for f in unread]
        if name == "merged":
            assert later == [unread[i].key for i in order_from(physics, head, positions, sizes)]
        by_key = {f.key: f for f in batch.files}
        path = [by_key[k] for k in started + later if k is not None]
        results[name] = path_locate_s(
            physics, [f.position_bytes for f in path], [f.size_bytes for f in path], list(range(len(path)))
        )
    assert results["merged"] < results["alone"]


def test_the_order_from_a_head_is_a_permutation_no_dearer_than_greedy_from_there():
    physics = TapePhysics(load_profile("lto9"))
    capacity = physics.profile.capacity_bytes
    rng = np.random.default_rng(5)
    for _ in range(50):
        count = int(rng.integers(1, 40))
        positions = rng.integers(0, capacity - 10**11, size=count).tolist()
        sizes = rng.integers(10**8, 10**10, size=count).tolist()
        head = int(rng.integers(0, capacity - 10**11))
        order = order_from(physics, head, positions, sizes)
        assert sorted(order) == list(range(count))
        greedy = shortest_locate_first(physics, head, positions, sizes)
        ours_s = path_locate_s(physics, positions, sizes, order, head)
        assert ours_s <= path_locate_s(physics, positions, sizes, greedy, head) + 1e-9
