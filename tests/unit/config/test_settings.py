"""Settings: defaults, CAROUSEL_ variables, a TOML file that adds to them, errors naming the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from carousel.config import CONFIG_FILE_ENV, Settings, default_adapter_options, load_settings
from carousel.domain.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)


def test_embedded_defaults() -> None:
    settings = load_settings()
    assert settings.database_url.startswith("sqlite:///")
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.adapter == "simulated"
    assert settings.adapter_options["profile"] == "lto8"
    assert settings.limits.max_files_per_request_native == 100_000
    assert settings.anonymous is True
    assert settings.policy == "carousel", "the cost model plans unless an admin chooses otherwise"


def test_environment_and_nested_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAROUSEL_PORT", "9001")
    monkeypatch.setenv("CAROUSEL_LIMITS__MAX_BODY_BYTES", "1024")
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS", '{"profile": "lto9", "drives": 2}')
    settings = load_settings()
    assert settings.port == 9001
    assert settings.limits.max_body_bytes == 1024
    assert settings.limits.max_files_per_request_native == 100_000  # untouched nested default
    # merged onto the embedded defaults (tests/unit/config/test_adapter_options_merge.py)
    assert settings.adapter_options == {**default_adapter_options(), "profile": "lto9", "drives": 2}


def test_toml_file_adds_and_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "carousel.toml"
    config.write_text('site_name = "BNL"\nport = 8100\n[limits]\nmax_archiveinfo_paths = 7\n')
    monkeypatch.setenv(CONFIG_FILE_ENV, str(config))
    monkeypatch.setenv("CAROUSEL_PORT", "8200")
    settings = load_settings()
    assert settings.site_name == "BNL"
    assert settings.port == 8200
    assert settings.limits.max_archiveinfo_paths == 7


def test_missing_config_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CONFIG_FILE_ENV, str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match=r"nope\.toml: no such file"):
        load_settings()


def test_broken_toml_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("port = = 3\n")
    monkeypatch.setenv(CONFIG_FILE_ENV, str(config))
    with pytest.raises(ConfigError, match="settings"):
        load_settings()


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("CAROUSEL_PORT", "eighty", "port"),
        ("CAROUSEL_LIMITS__MAX_BODY_BYTES", "0", "limits.max_body_bytes"),
        ("CAROUSEL_PUBLIC_URL", "example.org", "public_url"),
    ],
)
def test_bad_values_name_the_key(monkeypatch: pytest.MonkeyPatch, key: str, value: str, named: str) -> None:
    monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match=rf"setting {named}:"):
        load_settings()


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ConfigError, match="setting databse_url"):
        load_settings(databse_url="sqlite://")


def test_public_url_loses_its_trailing_slash() -> None:
    assert Settings(public_url="https://tape.example.org:8443/").public_url == "https://tape.example.org:8443"


def test_liveness_read_timeout_and_fair_share_settings_have_defaults_and_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = load_settings()
    assert (settings.liveness_factor, settings.liveness_floor_s, settings.liveness_probe_files) == (
        3.0,
        900.0,
        5,
    )
    assert (settings.read_timeout_factor, settings.read_timeout_margin_s) == (3.0, 600.0)
    assert settings.fair_share_window_s == 86_400.0
    monkeypatch.setenv("CAROUSEL_FAIR_SHARE_WINDOW_S", "3600")
    monkeypatch.setenv("CAROUSEL_ADAPTER_OPTIONS__READ_ORDER", "shortest_locate")
    changed = load_settings()
    assert changed.fair_share_window_s == 3600.0
    assert changed.adapter_options["read_order"] == "shortest_locate"
    monkeypatch.setenv("CAROUSEL_LIVENESS_FACTOR", "0.5")
    with pytest.raises(ConfigError, match="liveness_factor"):
        load_settings()


def test_the_data_dir_is_the_users_data_directory_wherever_the_process_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    for cwd in (tmp_path / "one", tmp_path / "two"):
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        settings = load_settings()
        assert settings.data_dir == tmp_path / "xdg" / "carousel"
        assert settings.database_url == f"sqlite:///{tmp_path / 'xdg' / 'carousel' / 'carousel.sqlite3'}"


def test_the_data_dir_setting_holds_the_embedded_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAROUSEL_DATA_DIR", "state")
    settings = load_settings()
    assert settings.data_dir == tmp_path / "state"  # made absolute once, where the command started
    assert settings.database_url == f"sqlite:///{tmp_path / 'state' / 'carousel.sqlite3'}"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert load_settings(data_dir="~/carousel").data_dir == tmp_path / "home" / "carousel"


def test_a_named_database_wins_over_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CAROUSEL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CAROUSEL_DATABASE_URL", "postgresql+psycopg://db.example/carousel")
    settings = load_settings()
    assert (settings.data_dir, settings.database_url) == (
        tmp_path,
        "postgresql+psycopg://db.example/carousel",
    )


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_data_dir_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CAROUSEL_DATA_DIR", value)
    with pytest.raises(ConfigError, match=r"setting data_dir: .*must name a directory"):
        load_settings()
