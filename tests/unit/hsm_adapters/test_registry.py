from pathlib import Path

import pytest

from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError
from hsm_adapters.registry import BUILT_IN, build_adapter, declared, load_factory


def declare_plugin(root: Path, name: str, target: str) -> None:
    """Installs a distribution's metadata on sys.path, as pip would, declaring one adapter entry point."""
    info = root / "adapter_under_test-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adapter-under-test\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[carousel.adapters]\n{name} = {target}\n")


def test_every_declared_adapter_loads():
    names = declared()
    assert set(BUILT_IN) <= set(names)
    for name in names:
        assert callable(load_factory(name))


def test_simulated_adapter_builds_on_its_defaults():
    adapter = build_adapter("simulated", {}, ManualClock())
    try:
        assert adapter.name
        assert adapter.capacity().drives_total > 0
    finally:
        adapter.close()


def test_unknown_adapter_names_the_choices():
    with pytest.raises(ConfigError, match=r"unknown adapter 'tapeless'.*simulated"):
        build_adapter("tapeless", {}, ManualClock())


def test_broken_plugin_stops_with_its_name(tmp_path, monkeypatch):
    declare_plugin(tmp_path, "broken", "no_such_module_anywhere:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"adapter 'broken'.*failed to load"):
        build_adapter("broken", {}, ManualClock())


def test_plugin_refusing_its_options_is_named(tmp_path, monkeypatch):
    (tmp_path / "adapter_plugin_picky.py").write_text(
        "def build(options, clock):\n    raise ValueError(f'unknown option {sorted(options)[0]!r}')\n"
    )
    declare_plugin(tmp_path, "picky", "adapter_plugin_picky:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="adapter 'picky': bad options: unknown option 'speed'"):
        build_adapter("picky", {"speed": 3}, ManualClock())


def test_plugin_that_builds_no_adapter_is_refused(tmp_path, monkeypatch):
    (tmp_path / "adapter_plugin_shapeless.py").write_text("def build(options, clock):\n    return 42\n")
    declare_plugin(tmp_path, "shapeless", "adapter_plugin_shapeless:build")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="'shapeless' built a int"):
        build_adapter("shapeless", {}, ManualClock())
