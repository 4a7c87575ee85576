"""The program's settings: defaults, the TOML file, CAROUSEL_XROOTD_* variables, errors naming the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError
from carousel.xrootd.settings import CONFIG_FILE_ENV, QUERY_ANSWER_BYTES, load_program_settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "xrootd.toml"
    path.write_text(text)
    monkeypatch.setenv(CONFIG_FILE_ENV, str(path))
    return path


def test_defaults_from_an_empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, monkeypatch, "")
    settings = load_program_settings()
    assert settings.base_url == "http://127.0.0.1:8000"
    assert settings.bearer_token() is None
    assert settings.timeout_s == 10.0
    assert (settings.group, settings.activity) == (None, "default")
    assert settings.max_query_bytes == QUERY_ANSWER_BYTES


def test_the_file_then_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(
        tmp_path,
        monkeypatch,
        'url = "https://carousel.example.org:8443/"\ntoken = "s3cret"\ntimeout_s = 3\ngroup = "star"\n',
    )
    monkeypatch.setenv("CAROUSEL_XROOTD_TIMEOUT_S", "7.5")
    settings = load_program_settings()
    assert settings.base_url == "https://carousel.example.org:8443"
    assert settings.bearer_token() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.timeout_s == 7.5
    assert settings.group == "star"


def test_a_token_file_is_read_at_each_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    _config(tmp_path, monkeypatch, f'token_file = "{token}"\n')
    settings = load_program_settings()
    assert settings.bearer_token() == "first"
    token.write_text("renewed")
    assert settings.bearer_token() == "renewed"
    token.write_text("  \n")
    with pytest.raises(ConfigError, match=f"token_file {token}: empty"):
        settings.bearer_token()
    token.unlink()
    with pytest.raises(ConfigError, match=f"token_file {token}: No such file"):
        settings.bearer_token()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "timeout_s = 0\n",
            "setting timeout_s ({path} or CAROUSEL_XROOTD_TIMEOUT_S): Input should be greater",
        ),
        ('url = "carousel:8000"\n', "setting url ("),
        ("tiemout_s = 3\n", "setting tiemout_s ("),
        ('group = "two words"\n', "setting group ("),
        ('token = "a"\ntoken_file = "/b"\n', "set token or token_file, not both"),
        ("url = \n", "{path}: "),
    ],
)
def test_bad_settings_name_the_key_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, says: str
) -> None:
    path = _config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as caught:
        load_program_settings()
    assert says.format(path=path) in str(caught.value)


def test_a_bad_variable_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, monkeypatch, "")
    monkeypatch.setenv("CAROUSEL_XROOTD_MAX_QUERY_BYTES", "12")
    with pytest.raises(ConfigError, match="CAROUSEL_XROOTD_MAX_QUERY_BYTES"):
        load_program_settings()


def test_a_named_file_must_be_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_FILE_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=f"{CONFIG_FILE_ENV} file {tmp_path}/missing.toml: No such file"):
        load_program_settings()
