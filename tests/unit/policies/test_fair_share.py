import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.errors import ConfigError
from carousel.domain.planning import GroupDemand
from policies.fair_share import FairShareOptions, FairSharePolicy, shares
from policies.registry import build_policy
from tests.unit.policies.snapshots import T0, busy, snapshot, tape


def fair(weights=None, quotas=None, inner="carousel", **inner_options) -> FairSharePolicy:
    policy = build_policy(
        inner, {**inner_options, "fair_share": {"weights": weights or {}, "quotas": quotas or {}}}
    )
    assert isinstance(policy, FairSharePolicy)
    return policy


def per_group(plan) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for s in plan.selections:
        found.setdefault(s.group, []).append(s.tape)
    return found


def work(group: str, count: int, files: int = 10, age_s: float = 1000.0):
    """Tapes that have waited long enough for carousel to mount them however busy the drives are."""
    return [tape(f"{group}{n}", files, group=group, age_s=age_s) for n in range(count)]


def test_drives_are_split_by_weight_among_groups_with_work():
    plan = fair({"atlas": 3, "cms": 1}).plan(snapshot(*work("atlas", 8), *work("cms", 8), drives=4))
    chosen = per_group(plan)
    assert (len(chosen["atlas"]), len(chosen["cms"])) == (3, 1)
    assert plan.waiting["cms1"] == "cms: the group has its share of the drives"


def test_an_idle_groups_share_is_lent():
    plan = fair({"atlas": 3, "cms": 1}).plan(snapshot(*work("cms", 8), drives=4))
    assert len(per_group(plan)["cms"]) == 4


def test_drives_the_entitled_cannot_use_are_lent_to_the_others():
    plan = fair({"atlas": 3, "cms": 1}).plan(snapshot(*work("atlas", 1), *work("cms", 8), drives=4))
    chosen = per_group(plan)
    assert (len(chosen["atlas"]), len(chosen["cms"])) == (1, 3)


def test_a_quota_is_never_exceeded_even_when_others_are_idle():
    plan = fair(quotas={"cms": 0.5}).plan(snapshot(*work("cms", 8), drives=4))
    assert len(per_group(plan)["cms"]) == 2


def test_the_contested_drive_goes_to_the_group_furthest_below_its_share_of_drive_time():
    both = (*work("atlas", 4), *work("cms", 4))
    # 2 drives, 3:1: atlas is entitled to 1, cms to 0; the second follows the drive-time accounts
    behind_atlas = fair({"atlas": 3, "cms": 1}).plan(
        snapshot(*both, drives=2, usage={"atlas": 100, "cms": 100})
    )
    assert {g: len(t) for g, t in per_group(behind_atlas).items()} == {"atlas": 2}
    behind_cms = fair({"atlas": 3, "cms": 1}).plan(
        snapshot(*both, drives=2, usage={"atlas": 900, "cms": 100})
    )
    assert {g: len(t) for g, t in per_group(behind_cms).items()} == {"atlas": 1, "cms": 1}


def test_a_group_holding_more_than_its_share_gets_no_new_drive():
    held = (busy("X1", group="atlas"), busy("X2", group="atlas"), busy("X3", group="atlas"))
    plan = fair({"atlas": 1, "cms": 1}).plan(
        snapshot(*work("atlas", 3), *work("cms", 3), drives=4, in_flight=held)
    )
    assert per_group(plan) == {"cms": ["cms0"]}


def test_selections_are_narrowed_to_the_group_and_shared_tapes_join_for_free():
    shared = tape(
        "S",
        6,
        groups=(
            GroupDemand("atlas", 4, 400, oldest=T0, max_priority=0),
            GroupDemand("cms", 2, 200, oldest=T0, max_priority=0),
        ),
    )
    # joining at once (carousel joins a tape being read once its drive has read what it holds)
    plan = fair({"atlas": 1, "cms": 1}, join_when_read=False).plan(
        snapshot(shared, drives=1, in_flight=(busy("S", 1, group="atlas"),))
    )
    assert sorted((s.group, s.tape, s.max_files) for s in plan.selections) == [
        ("atlas", "S", 4),
        ("cms", "S", 2),
    ]


def test_fifo_under_fair_share_splits_the_queue_slots():
    plan = fair({"atlas": 3, "cms": 1}, inner="fifo").plan(
        snapshot(*work("atlas", 8), *work("cms", 8), drives=4, slots={"default": 40})
    )
    assert {s.group: s.max_files for s in plan.selections} == {"atlas": 30, "cms": 10}


@given(
    weights=st.dictionaries(st.sampled_from("abcde"), st.floats(0.1, 10), min_size=1),
    quotas=st.dictionaries(st.sampled_from("abcde"), st.floats(0.05, 1.0)),
    present=st.sets(st.sampled_from("abcde"), min_size=1),
)
def test_shares_respect_quotas_and_sum_to_one_unless_every_group_is_capped(weights, quotas, present):
    options = FairShareOptions(weights=weights, quotas=quotas)
    found = shares(sorted(present), options)
    assert set(found) == present
    assert all(found[g] <= quotas.get(g, 1.0) + 1e-9 for g in present)
    if any(g not in quotas for g in present):
        assert math.isclose(sum(found.values()), 1.0)
    uncapped = [g for g in present if g not in quotas or found[g] < quotas[g] - 1e-9]
    for a in uncapped:
        for b in uncapped:  # uncapped groups keep the ratio of their weights
            assert math.isclose(found[a] * options.weight(b), found[b] * options.weight(a), rel_tol=1e-9)


@pytest.mark.parametrize(
    ("fair_share", "message"),
    [
        ({"weights": {"atlas": 0}}, "weights"),
        ({"quotas": {"atlas": 1.5}}, "quotas"),
        ({"colour": 1}, "colour"),
        (3, "table"),
    ],
)
def test_bad_fair_share_options_name_the_policy(fair_share, message):
    with pytest.raises(ConfigError, match=rf"policy 'cta': bad options.*{message}"):
        build_policy("cta", {"fair_share": fair_share})


def test_the_layer_answers_to_the_inner_policys_name():
    assert fair(inner="cta").name == "cta"
