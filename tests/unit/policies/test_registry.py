import pytest

from carousel.domain.errors import ConfigError
from carousel.domain.planning import Plan
from policies.base import Policy
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
