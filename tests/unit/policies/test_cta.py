from datetime import timedelta

from policies.cta import CtaOptions, CtaPolicy
from tests.unit.policies.snapshots import GB, MB, T0, busy, snapshot, tape


def cta(**changes) -> CtaPolicy:
    return CtaPolicy(CtaOptions(**{"min_bytes": 10 * GB, "min_files": 100, "min_age_s": 600, **changes}))


def test_a_tape_mounts_once_bytes_or_files_or_age_pass_their_threshold():
    plan = cta().plan(
        snapshot(
            tape("bytes", 5, size=3 * GB),
            tape("files", 100, size=1),
            tape("age", 1, age_s=600),
            tape("young", 99, size=1, age_s=599),
            drives=8,
        )
    )
    assert sorted(s.tape for s in plan.selections) == ["age", "bytes", "files"]
    assert "below the mount thresholds: 99 of 100 files" in plan.waiting["young"]
    # time alone makes "young" eligible one second later
    assert plan.wake_at == T0 + timedelta(seconds=1)


def test_candidates_take_drives_by_priority_then_age():
    plan = cta().plan(
        snapshot(
            tape("old", 1, age_s=5000),
            tape("older", 1, age_s=9000),
            tape("urgent", 1, age_s=700, priority=5),
            drives=2,
        )
    )
    assert [s.tape for s in plan.selections] == ["urgent", "older"]
    assert plan.waiting["old"] == "ready to mount: waiting for a free drive"


def test_a_group_holds_no_more_than_its_drive_limit():
    plan = cta(max_drives={"atlas": 1}).plan(
        snapshot(
            tape("A1", 1, age_s=900, group="atlas"),
            tape("A2", 1, age_s=800, group="atlas"),
            tape("C1", 1, age_s=700, group="cms"),
            drives=3,
            in_flight=(busy("A0", 5, group="atlas"),),
        )
    )
    assert [s.tape for s in plan.selections] == ["C1"]
    assert "group 'atlas' holds its 1 drives" in plan.waiting["A1"]


def test_a_tape_in_session_is_fed_batches_while_less_than_one_is_in_flight():
    policy = cta(batch_max_files=10, batch_max_bytes=GB)
    plan = policy.plan(snapshot(tape("A", 50, size=10 * MB), in_flight=(busy("A", 4, size=10 * MB),)))
    (selection,) = plan.selections
    assert (selection.tape, selection.max_files, selection.max_bytes) == ("A", 6, GB - 40 * MB)
    full = policy.plan(snapshot(tape("A", 50, size=10 * MB), in_flight=(busy("A", 10, size=10 * MB),)))
    assert full.selections == ()
    assert "current batch" in full.waiting["A"]


def test_an_idle_mounted_tape_is_a_new_mount_for_cta():
    plan = cta().plan(snapshot(tape("A", 1, age_s=10), mounted=("A",)))
    assert plan.selections == ()
    assert "below the mount thresholds" in plan.waiting["A"]


def test_a_session_does_not_count_against_free_drives_twice():
    plan = cta().plan(
        snapshot(tape("A", 1, age_s=10), tape("B", 1, age_s=900), drives=2, in_flight=(busy("A", 1),))
    )
    assert sorted(s.tape for s in plan.selections) == ["A", "B"]


def test_a_session_leaves_files_that_failed_for_a_later_mount():
    policy = cta(batch_max_files=10, batch_max_bytes=GB)
    plan = policy.plan(snapshot(tape("A", 5, size=MB, retries=2), in_flight=(busy("A", 1, size=MB),)))
    (selection,) = plan.selections
    assert (selection.max_files, selection.first_attempts_only) == (3, True)
    only = policy.plan(snapshot(tape("A", 2, size=MB, retries=2), in_flight=(busy("A", 1, size=MB),)))
    assert only.selections == () and "later one" in only.waiting["A"]
    mounted = policy.plan(snapshot(tape("A", 2, size=MB, retries=2, age_s=9000), mounted=("A",)))
    assert mounted.selections == () and "still mounted" in mounted.waiting["A"]
