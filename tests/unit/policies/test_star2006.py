import pytest

from policies.registry import build_policy
from policies.star2006 import Star2006Options, Star2006Policy, build_star2006
from tests.unit.policies.snapshots import busy, snapshot, tape


def small(**changes) -> Star2006Policy:
    return Star2006Policy(Star2006Options(**{"jobs": 2, "files_per_job": 3, "overflow_jobs": 1, **changes}))


def test_tape_with_most_files_first_in_jobs_of_n_up_to_k_plus_overflow_jobs():
    plan = small().plan(snapshot(tape("A", 2, age_s=500), tape("B", 7), tape("C", 4, age_s=10)))
    # ceiling (2 + 1) · 3 = 9 files: B's 7 (jobs of 3, 3, 1) then 2 of C's 4; A waits
    assert [(s.tape, s.max_files) for s in plan.selections] == [("B", 3), ("B", 3), ("B", 1), ("C", 2)]
    assert "already" in plan.waiting["A"]
    assert all(s.order == "POSITION" and not s.one_file_per_batch for s in plan.selections)


def test_ties_go_to_the_oldest_request_then_the_tape_id():
    plan = small().plan(snapshot(tape("B", 3, age_s=5), tape("A", 3, age_s=5), tape("C", 3, age_s=50)))
    assert [s.tape for s in plan.selections] == ["C", "A", "B"]


def test_nothing_more_while_k_jobs_are_in_flight_then_topped_up_to_the_ceiling():
    policy = small()
    at_floor = snapshot(tape("A", 20), in_flight=(busy("X", 6),))
    plan = policy.plan(at_floor)
    assert plan.selections == ()
    assert "K·N" in plan.waiting["A"]
    below = policy.plan(snapshot(tape("A", 20), in_flight=(busy("X", 5),)))
    assert sum(s.max_files for s in below.selections) == 9 - 5


def test_the_defaults_are_stars():
    options = build_star2006({}).options
    assert (options.jobs, options.files_per_job, options.overflow_jobs) == (50, 15, 25)
    assert options.depth == {"default": 30, "raw": 20}
    assert (options.floor_files, options.ceiling_files) == (750, 1125)


def test_options_are_checked():
    with pytest.raises(Exception, match="files_per_job"):
        build_policy("star2006", {"files_per_job": 0})
