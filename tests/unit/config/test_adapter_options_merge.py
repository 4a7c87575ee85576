"""The simulated library's options merge onto the embedded defaults, whichever source sets them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from carousel.config import CONFIG_FILE_ENV, default_adapter_options, load_settings
from hsm_adapters.simulated.adapter import GenerateOptions, parse_options


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)


def test_one_nested_variable_keeps_every_other_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__SCALE", "1000")
    options = load_settings().adapter_options
    defaults = default_adapter_options()
    assert {k: v for k, v in options.items() if k != "scale"} == {
        k: v for k, v in defaults.items() if k != "scale"
    }
    parsed = parse_options(options)
    assert parsed.scale == 1000.0
    assert parsed.profile == defaults["profile"] and parsed.drives == defaults["drives"]
    assert parsed.catalogue.generate is not None
    assert parsed.catalogue.generate.cartridges == defaults["catalogue"]["generate"]["cartridges"]


def test_a_catalogue_given_replaces_the_default_one_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # A seed of one's own merged into the demo library's size model would be a library nobody described:
    # the keys a catalogue leaves out take the generator's defaults.
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__GENERATE__SEED", "7")
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__DRIVES", "2")
    options = load_settings().adapter_options
    assert options["catalogue"] == {"generate": {"seed": 7}}
    parsed = parse_options(options)
    assert parsed.catalogue.generate == GenerateOptions(seed=7)
    assert parsed.catalogue.generate != GenerateOptions(**default_adapter_options()["catalogue"]["generate"])
    assert (parsed.drives, parsed.profile) == (2, default_adapter_options()["profile"])


def test_toml_and_environment_merge_with_each_other_and_the_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "carousel.toml"
    config.write_text("[adapter_options]\ndrives = 3\n[adapter_options.catalogue.generate]\ncartridges = 9\n")
    monkeypatch.setenv(CONFIG_FILE_ENV, str(config))
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__SCALE", "50")
    parsed = parse_options(load_settings().adapter_options)
    assert (parsed.drives, parsed.scale, parsed.profile) == (3, 50.0, default_adapter_options()["profile"])
    assert parsed.catalogue.generate == GenerateOptions(cartridges=9)


def test_a_csv_catalogue_replaces_the_generated_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__CATALOGUE__CSV", str(tmp_path / "library.csv"))
    options = load_settings().adapter_options
    assert options["catalogue"] == {"csv": str(tmp_path / "library.csv")}
    assert parse_options(options).catalogue.csv == str(tmp_path / "library.csv")  # not "both given"


def test_another_adapter_starts_from_its_own_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAROUSEL_ADAPTER", "command")
    assert load_settings().adapter_options == {}
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__STAGE__ARGV", '["hsm-stage"]')
    assert load_settings().adapter_options == {"stage": {"argv": ["hsm-stage"]}}
