import pytest

from carousel.domain.errors import ConfigError
from carousel.domain.planning import Plan
from policies.base import Policy
from policies.common import MAX_DURATION_S
from policies.registry import available_policies, build_policy
from tests.unit.policies.plugins import declare_plugin


def test_every_declared_policy_builds_with_its_defaults():
    names = available_policies()
    assert "fifo" in names
    for name in names:
        policy = build_policy(name, {})
        assert isinstance(policy, Policy)
        assert policy.name == name


def test_unknown_policy_names_the_choices():
    with pytest.raises(ConfigError, match=r"unknown policy 'nope'.*fifo"):
        build_policy("nope")


def test_bad_options_name_the_policy():
    with pytest.raises(ConfigError, match="policy 'fifo': bad options"):
        build_policy("fifo", {"max_files": -1})


# (policy, a number option, a good value of it)
NUMBER_OPTIONS = [
    ("fifo", "max_files", 10),
    ("star2006", "jobs", 5),
    ("cta", "min_age_s", 60.0),
    ("carousel", "join_after_s", 120.0),
    ("carousel", "max_wait_s", 3600),
]


@pytest.mark.parametrize(("policy", "option", "good"), NUMBER_OPTIONS)
def test_a_number_option_takes_numbers_only(policy, option, good):
    """A string that reads as a number, or a boolean, is not a number: lax parsing would keep "300" or true as
    the admin's choice and plan with what it reads them as."""
    build_policy(policy, {option: good})
    for bad in (str(good), True):
        with pytest.raises(ConfigError, match=rf"(?s)policy '{policy}': bad options.*{option}"):
            build_policy(policy, {option: bad})


@pytest.mark.parametrize(
    ("policy", "option"), [("cta", "min_age_s"), ("carousel", "join_after_s"), ("carousel", "max_wait_s")]
)
def test_a_duration_option_is_at_most_a_year(policy, option):
    """A wait added to a request's age must stay a date (10^12 s overflowed planning)."""
    build_policy(policy, {option: MAX_DURATION_S})
    with pytest.raises(ConfigError, match=rf"(?s)policy '{policy}': bad options.*{option}"):
        build_policy(policy, {option: 1e12})


def test_cost_options_take_the_lists_json_gives():
    policy = build_policy("carousel", {"costs": {"locate_s": [[1, 50.0], [8, 40]]}})
    assert policy.options.costs.locate_s == ((1, 50.0), (8, 40.0))
    with pytest.raises(ConfigError, match="locate_s"):
        build_policy("carousel", {"costs": {"locate_s": [[1, "50"]]}})


def test_fair_share_weights_are_numbers():
    build_policy("fifo", {"fair_share": {"weights": {"atlas": 3}}})
    with pytest.raises(ConfigError, match=r"fair_share\.weights"):
        build_policy("fifo", {"fair_share": {"weights": {"atlas": "3"}}})


def test_plugin_is_found_through_entry_points(tmp_path, monkeypatch):
    module = tmp_path / "plugin_policy_ok.py"
    module.write_text(
        "from carousel.domain.planning import Plan\n"
        "class Idle:\n"
        "    name = 'idle'\n"
        "    def plan(self, snapshot):\n"
        "        return Plan()\n"
        "def build(options):\n"
        "    return Idle()\n"
    )
    declare_plugin(tmp_path, "carousel.policies", "idle", "plugin_policy_ok:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "idle" in available_policies()
    policy = build_policy("idle")
    assert policy.name == "idle"
    assert isinstance(policy.plan(None), Plan)  # type: ignore[arg-type]


def test_broken_plugin_stops_with_its_name(tmp_path, monkeypatch):
    declare_plugin(tmp_path, "carousel.policies", "broken", "no_such_module_anywhere:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"policy plug-in 'broken'.*failed to load"):
        build_policy("broken")


def test_plugin_that_builds_no_policy_is_refused(tmp_path, monkeypatch):
    (tmp_path / "plugin_policy_bad.py").write_text("def build(options):\n    return object()\n")
    declare_plugin(tmp_path, "carousel.policies", "shapeless", "plugin_policy_bad:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'shapeless'.*no plan"):
        build_policy("shapeless")
