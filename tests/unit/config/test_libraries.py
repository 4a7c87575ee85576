"""Settings `libraries` (docs/decisions.md §17): several libraries by name, each its adapter and options;
without them the service's adapter is one library named `default`; bad names and mixed settings refused in
one line; a service process given several refuses to start, naming them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.config import CONFIG_FILE_ENV, default_adapter_options, load_settings
from carousel.config.libraries import libraries_of, sole_adapter, sole_library
from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError

TWO = """
[libraries.new]
adapter = "simulated"
adapter_options = { profile = "lto9", drives = 8 }

[libraries.old]
adapter_options = { profile = "lto7", drives = 4 }
"""


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CAROUSEL_DATA_DIR", str(tmp_path / "data"))


def with_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> None:
    path = tmp_path / "carousel.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(CONFIG_FILE_ENV, str(path))


def test_without_libraries_the_adapter_is_one_library_named_default() -> None:
    settings = load_settings()
    assert settings.libraries == {}
    ((name, library),) = libraries_of(settings).items()
    assert name == "default"
    assert (library.adapter, library.adapter_options) == ("simulated", default_adapter_options())
    assert sole_library(settings)[0] == "default"


def test_two_libraries_from_a_file_each_over_the_simulated_defaults(monkeypatch, tmp_path) -> None:
    with_file(monkeypatch, tmp_path, TWO)
    libraries = libraries_of(load_settings())
    assert list(libraries) == ["new", "old"]
    assert (libraries["new"].adapter_options["profile"], libraries["new"].adapter_options["drives"]) == (
        "lto9",
        8,
    )
    assert (libraries["old"].adapter, libraries["old"].adapter_options["profile"]) == ("simulated", "lto7")
    # the keys a library leaves out are the embedded defaults', as for adapter_options
    assert libraries["old"].adapter_options["scale"] == default_adapter_options()["scale"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[libraries.New]\nadapter = "simulated"\n',
            "setting libraries: Value error, 'New' is not a library name",
        ),
        (
            '[libraries.a]\nadaptor = "simulated"\n',
            "setting libraries.a.adaptor: Extra inputs are not permitted",
        ),
        ('adapter = "simulated"\n' + TWO, "set either libraries or adapter and adapter_options, not both"),
    ],
)
def test_bad_library_settings_are_one_line_naming_the_key(monkeypatch, tmp_path, text, message) -> None:
    with_file(monkeypatch, tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_library_whose_adapter_is_unknown_is_named(monkeypatch, tmp_path) -> None:
    with_file(monkeypatch, tmp_path, '[libraries.old]\nadapter = "nope"\n')
    with pytest.raises(ConfigError, match=r"^library old: unknown adapter 'nope'"):
        sole_adapter(load_settings(), ManualClock())


def test_one_named_library_is_the_library_a_process_runs(monkeypatch, tmp_path) -> None:
    with_file(monkeypatch, tmp_path, '[libraries.old]\nadapter_options = { profile = "lto7", drives = 2 }\n')
    adapter = sole_adapter(load_settings(), ManualClock())
    try:
        assert adapter.capacity().drives_total == 2
    finally:
        adapter.close()


def test_a_command_of_one_library_given_several_refuses_in_one_line(monkeypatch, tmp_path) -> None:
    """What works on one library only (the policy history replay) is refused a site in one line; `library
    files` lists a site's libraries in turn (tests/integration/test_cli_libraries.py)."""
    with_file(monkeypatch, tmp_path, TWO)
    with pytest.raises(ConfigError, match=r"2 libraries \(new, old\), but this command works on one library"):
        sole_library(load_settings())
    result = CliRunner().invoke(app, ["library", "files", "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines() == ["/star/data/T00001/1.root"]
