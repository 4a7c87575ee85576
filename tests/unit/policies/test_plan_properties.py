"""Properties every built-in policy keeps, over random snapshots (hypothesis)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings

from carousel.domain.planning import Snapshot
from policies.registry import build_policy
from tests.unit.policies.snapshots import snapshots

POLICIES = {
    "fifo": {},
    "star2006": {},
    "cta": {"min_age_s": 600},
    "carousel": {},
    "carousel+fair": {"fair_share": {"weights": {"atlas": 3, "cms": 1}, "quotas": {"star": 0.5}}},
    "cta+fair": {"min_age_s": 600, "fair_share": {"weights": {"atlas": 2}}},
}


def build(key: str):
    return build_policy(key.split("+", maxsplit=1)[0], POLICIES[key])


@pytest.mark.parametrize("key", sorted(POLICIES))
@settings(max_examples=60, deadline=None)
@given(snap=snapshots())
def test_same_snapshot_same_plan_whatever_the_order_of_its_tapes(key: str, snap: Snapshot):
    policy = build(key)
    first = policy.plan(snap)
    assert policy.plan(snap) == first
    shuffled = list(snap.tapes)
    random.Random(len(shuffled)).shuffle(shuffled)
    again = policy.plan(replace(snap, tapes=tuple(shuffled)))
    # the order of selections decides claims and the library's order of work: it must not depend on the
    # order the store lists its tapes in (the database and the memory store list them differently)
    assert again.selections == first.selections
    assert again.waiting == first.waiting
    assert again.wake_at == first.wake_at


@pytest.mark.parametrize("key", sorted(POLICIES))
@settings(max_examples=60, deadline=None)
@given(snap=snapshots())
def test_plans_name_only_tapes_with_work_and_never_more_files_than_they_hold(key: str, snap: Snapshot):
    plan = build(key).plan(snap)
    files = {t.tape: t.files for t in snap.tapes}
    asked: dict[str, int] = {}
    for selection in plan.selections:
        assert selection.max_files >= 1
        if selection.tape is not None:
            assert selection.tape in files
            asked[selection.tape] = asked.get(selection.tape, 0) + selection.max_files
    assert all(asked[t] <= files[t] for t in asked)
    assert set(plan.waiting) <= set(files)
    if plan.wake_at is not None:
        assert plan.wake_at > snap.now


@pytest.mark.parametrize("key", ["cta", "carousel", "carousel+fair", "cta+fair"])
@settings(max_examples=60, deadline=None)
@given(snap=snapshots())
def test_mount_policies_start_no_more_tapes_than_there_are_free_drives(key: str, snap: Snapshot):
    plan = build(key).plan(snap)
    busy = {t.tape for t in snap.in_flight_tapes}
    new_tapes = {s.tape for s in plan.selections if s.tape not in busy}
    assert len(new_tapes) <= max(0, snap.library.drives_total - len(busy))


@pytest.mark.parametrize("key", sorted(POLICIES))
@settings(max_examples=20, deadline=None)
@given(snap=snapshots())
def test_an_offline_library_gets_nothing(key: str, snap: Snapshot):
    offline = replace(snap, library=replace(snap.library, online=False))
    plan = build(key).plan(offline)
    assert plan.selections == ()
    assert set(plan.waiting) == {t.tape for t in snap.tapes}
