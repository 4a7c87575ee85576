"""Drive profiles: every built-in file loads, and a broken file is refused with its file, line and key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from carousel.domain.errors import ConfigError
from hsm_adapters.simulated.profiles import PROFILE_KEYS, DriveProfile, builtin_profiles, load_profile

PROFILE_DIR = Path(__file__).parents[4] / "hsm_adapters" / "simulated" / "profiles"
DOC = Path(__file__).parents[4] / "docs" / "simulated-library.md"
OPTIONAL_KEYS = {"first_load_penalty_s", "rewind_at_unload"}


def test_the_five_drives_of_the_issue_are_built_in():
    assert {"t9940b", "lto3", "lto7", "lto8", "lto9"} <= set(builtin_profiles())


@pytest.mark.parametrize("name", builtin_profiles())
def test_every_builtin_profile_loads_and_is_consistent(name: str):
    profile = load_profile(name)
    assert isinstance(profile, DriveProfile)
    assert profile.name == name
    assert profile.sources
    assert profile.estimated <= set(PROFILE_KEYS)
    assert profile.rewind_avg_s <= profile.rewind_max_s <= 2 * profile.rewind_avg_s
    assert profile.mount_limit_soft <= profile.mount_limit_hard


@pytest.mark.parametrize("name", builtin_profiles())
def test_the_doc_lists_each_profiles_estimates_exactly(name: str):
    # docs/simulated-library.md has one row per profile: | `name` | `key`, `key` ... |
    row = re.search(rf"^\| `{name}` \|([^|]*)\|", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    assert row, f"no estimates row for {name} in {DOC.name}"
    assert set(re.findall(r"`([a-z_0-9]+)`", row.group(1))) == load_profile(name).estimated


def test_the_doc_documents_every_key():
    text = DOC.read_text(encoding="utf-8")
    for key in PROFILE_KEYS:
        assert re.search(rf"^\| `{key}` \|", text, re.MULTILINE), key


def test_lto9_carries_the_rewind_at_unload_classes_and_the_new_media_penalty():
    profile = load_profile("lto9")
    assert [seconds for _, seconds in profile.rewind_at_unload] == [55.0, 110.0, 165.0]
    assert profile.first_load_penalty_s > 0
    assert all(load_profile(name).first_load_penalty_s == 0 for name in builtin_profiles() if name != "lto9")


def test_a_custom_profile_is_one_more_file(tmp_path: Path):
    text = (PROFILE_DIR / "lto8.toml").read_text().replace('name = "lto8"', 'name = "site_lto8"')
    custom = tmp_path / "site_lto8.toml"
    custom.write_text(text.replace("load_s = 15.0", "load_s = 21.5"))
    profile = load_profile(custom)
    assert (profile.name, profile.load_s) == ("site_lto8", 21.5)
    assert load_profile(str(custom)) == profile


def write_broken(tmp_path: Path, old: str, new: str) -> Path:
    text = (PROFILE_DIR / "lto7.toml").read_text()
    assert old in text
    path = tmp_path / "broken.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def line_of(path: Path, fragment: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if fragment in line)


@pytest.mark.parametrize("key", sorted(set(PROFILE_KEYS) - OPTIONAL_KEYS))
def test_a_missing_key_is_named(tmp_path: Path, key: str):
    text = (PROFILE_DIR / "lto7.toml").read_text()
    kept = [line for line in text.splitlines() if not line.startswith(f"{key} =")]
    # `estimated` spans one line in lto7.toml, so dropping its line drops the whole key
    path = tmp_path / "broken.toml"
    path.write_text("\n".join(kept) + "\n")
    with pytest.raises(ConfigError, match=rf"{re.escape(str(path))}: key '{key}': missing"):
        load_profile(path)


@pytest.mark.parametrize(
    ("old", "new", "key", "problem"),
    [
        ("load_s = 15.0", 'load_s = "15"', "load_s", "valid number"),
        ("wraps = 112", "wraps = 112.0", "wraps", "valid integer"),
        ("wraps = 112", "wraps = true", "wraps", "valid integer"),
        ("unload_s = 20.0", "unload_s = -1.0", "unload_s", "greater than or equal to 0"),
        ("capacity_bytes = 6_000_000_000_000", "capacity_bytes = 0", "capacity_bytes", "greater than 0"),
        ("rewind_max_s = 118.0", "rewind_max_s = 130.0", "rewind_max_s", "twice rewind_avg_s"),
        ("mount_limit_soft = 10_000", "mount_limit_soft = 20_000", "mount_limit_soft", "mount_limit_hard"),
        ('estimated = ["rewind_max_s"', 'estimated = ["speed"', "estimated", "'speed'"),
        (
            "rewind_at_unload = []",
            "rewind_at_unload = [[5, 1.0], [5, 2.0]]",
            "rewind_at_unload",
            "increasing",
        ),
        ("rewind_at_unload = []", "rewind_at_unload = [[5, -1.0]]", "rewind_at_unload", "item 0.1"),
    ],
)
def test_a_bad_value_names_file_line_and_key(tmp_path: Path, old: str, new: str, key: str, problem: str):
    path = write_broken(tmp_path, old, new)
    line = line_of(path, f"{key} =")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: line {line}: key '{key}':"), message
    assert problem in message


def test_an_unknown_key_is_named_with_its_line(tmp_path: Path):
    path = write_broken(tmp_path, "wraps = 112", "wraps = 112\nspeed_m_per_s = 5.0")
    with pytest.raises(
        ConfigError, match=rf"line {line_of(path, 'speed_m_per_s')}: key 'speed_m_per_s': unknown key"
    ):
        load_profile(path)


def test_bad_toml_names_file_and_line(tmp_path: Path):
    path = write_broken(tmp_path, "wraps = 112", "wraps = = 112")
    with pytest.raises(
        ConfigError, match=rf"{re.escape(str(path))}: not valid TOML: .*line {line_of(path, 'wraps')}"
    ):
        load_profile(path)


def test_an_unknown_name_lists_the_builtins():
    with pytest.raises(ConfigError, match=r"unknown drive profile 'lto99'.*lto9"):
        load_profile("lto99")


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"nowhere\.toml: cannot read"):
        load_profile(tmp_path / "nowhere.toml")
