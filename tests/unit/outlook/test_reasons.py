"""The built-in policies' waiting reasons, produced by running each policy, sort into the codes users see;
if a policy rewords a reason, this test says which code was lost."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from carousel.domain.buffer import BUFFER_FULL, BufferLimits, BufferUsage, view
from carousel.domain.planning import GroupDemand, Snapshot
from carousel.outlook.projection import project
from carousel.outlook.reasons import WaitCode, classify
from carousel.scheduler.liveness import stalled_reason
from policies.registry import build_policy
from tests.unit.policies.snapshots import busy, snapshot, tape


def reason_of(policy: str, options: dict[str, Any], queue: Snapshot, tape_name: str) -> str:
    plan = build_policy(policy, options).plan(queue)
    assert tape_name in plan.waiting, plan
    return plan.waiting[tape_name]


CASES = [
    pytest.param(
        "carousel", {}, snapshot(tape("A", 2), online=False), "A", WaitCode.LIBRARY_OFFLINE, id="offline"
    ),
    pytest.param(
        "carousel",
        {},
        snapshot(tape("A", 2), tape("B", 2), drives=1),
        "B",
        WaitCode.NO_FREE_DRIVE,
        id="carousel-no-drive",
    ),
    pytest.param(
        "carousel",
        {},
        snapshot(tape("A", 2), drives=4, in_flight=(busy("X"), busy("Y"), busy("Z"))),
        "A",
        WaitCode.NOT_WORTH_MOUNTING_YET,
        id="carousel-gathering",
    ),
    pytest.param(
        "carousel",
        {},
        snapshot(tape("A", 2, retries=2), in_flight=(busy("A"),), mounted=("A",)),
        "A",
        WaitCode.RETRY_PENDING,
        id="carousel-retries",
    ),
    pytest.param(
        "carousel",
        {},
        snapshot(tape("A", 2), tape("B", 2, age_s=5 * 3600), in_flight=(busy("A"),), drives=1),
        "A",
        WaitCode.NO_FREE_DRIVE,
        id="carousel-starving-other",
    ),
    pytest.param(
        "cta", {}, snapshot(tape("A", 2)), "A", WaitCode.NOT_WORTH_MOUNTING_YET, id="cta-thresholds"
    ),
    pytest.param(
        "cta",
        {"min_age_s": 0},
        snapshot(tape("A", 2), tape("B", 2), drives=1),
        "B",
        WaitCode.NO_FREE_DRIVE,
        id="cta-no-drive",
    ),
    pytest.param(
        "cta",
        {"min_age_s": 0, "max_drives": {"atlas": 1}},
        snapshot(tape("A", 2, group="atlas"), tape("B", 2, group="atlas", age_s=5), drives=4),
        "A",
        WaitCode.GROUP_OVER_SHARE,
        id="cta-drive-limit",
    ),
    pytest.param(
        "cta",
        {"min_age_s": 0},
        snapshot(tape("A", 2, retries=2), in_flight=(busy("A", 0),), mounted=("A",)),
        "A",
        WaitCode.RETRY_PENDING,
        id="cta-retries",
    ),
    pytest.param(
        "carousel",
        {"fair_share": {"weights": {"atlas": 1, "cms": 1}}},
        snapshot(
            tape("A", 2, group="atlas"),
            tape("B", 2, group="atlas", age_s=10),
            tape("C", 2, group="cms"),
            drives=2,
            in_flight=(busy("X", group="atlas"),),
        ),
        "B",
        WaitCode.GROUP_OVER_SHARE,
        id="fair-share",
    ),
    pytest.param(
        "star2006",
        {"jobs": 1, "files_per_job": 1},
        snapshot(tape("A", 2), in_flight=(busy("X"),)),
        "A",
        WaitCode.WAITING,
        id="star2006-in-flight-bound",
    ),
]


@pytest.mark.parametrize(("policy", "options", "queue", "tape_name", "code"), CASES)
def test_policy_reasons_sort_into_codes(
    policy: str, options: dict[str, Any], queue: Snapshot, tape_name: str, code: WaitCode
) -> None:
    reason = reason_of(policy, options, queue, tape_name)
    assert classify(reason) is code, reason


def test_the_cycles_stalled_library_reason_has_its_code() -> None:
    reason = stalled_reason(datetime(2026, 1, 1, 3, 4, 5, tzinfo=UTC), in_flight=40, probe_files=5)
    assert "since 2026-01-01 03:04:05" in reason
    assert classify(reason) is WaitCode.LIBRARY_STALLED


def test_a_reason_no_phrase_matches_keeps_its_words_under_waiting() -> None:
    assert classify("the moon is not right") is WaitCode.WAITING


def test_groups_in_the_fixture_are_what_fair_share_sees() -> None:
    # the fair-share case above only means something if tapes carry their group
    assert tape("A", 2, group="atlas").groups == (
        GroupDemand("atlas", 2, 2 * 100 * 10**6, tape("A", 2).oldest),
    )


def test_the_cycles_buffer_full_reason_has_its_code() -> None:
    assert classify(BUFFER_FULL) is WaitCode.BUFFER_FULL


def test_the_projection_shows_tapes_waiting_for_buffer_space() -> None:
    queue = snapshot(tape("A", 2), tape("B", 2), drives=4)
    full = BufferUsage(on_disk_bytes=100, pinned_bytes=95, reserved_bytes=0)
    buffered = replace(queue, buffer=view(BufferLimits(100), full))
    projection = project(buffered, build_policy("carousel", {}).plan)
    assert projection.plan.selections == ()
    assert {t: classify(r) for t, r in projection.plan.waiting.items()} == {
        "A": WaitCode.BUFFER_FULL,
        "B": WaitCode.BUFFER_FULL,
    }
    unbuffered = project(queue, build_policy("carousel", {}).plan)
    assert {s.tape for s in unbuffered.plan.selections} == {"A", "B"}
