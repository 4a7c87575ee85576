"""`carousel tape …` and `carousel drive …` on a real SQLite database and the configured (simulated) library:
changes checked and audited as through the admin API, naming the local user; a refusal is one line on
stderr naming the field, exit status 2, and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select

from carousel.db.engine import make_engine, make_session_factory
from carousel.db.models import MediaAudit
from tests.integration.test_cli_policy import cli


def env_for(tmp_path: Path, sqlite_template: Path) -> dict[str, str]:
    database = tmp_path / "media.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    return {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_DATA_DIR": str(tmp_path / "data")}


def audit_trail(env: dict[str, str]) -> list[tuple[str, str, str, str, str]]:
    engine = make_engine(env["CAROUSEL_DATABASE_URL"])
    try:
        with make_session_factory(engine)() as session:
            rows = session.scalars(select(MediaAudit).order_by(MediaAudit.id))
            return [(r.who, r.name, r.old_state, r.new_state, r.reason) for r in rows]
    finally:
        engine.dispose()


def refused(env: dict[str, str], *args: str, says: str) -> None:
    code, out, err = cli(env, *args)
    assert code == 2, (out, err)
    assert err.startswith("carousel: ") and len(err.strip().splitlines()) == 1, err
    assert says in err, err


def test_tapes_disabled_shown_listed_and_enabled_and_refusals(tmp_path: Path, sqlite_template: Path) -> None:
    env = env_for(tmp_path, sqlite_template)
    code, out, err = cli(env, "tape", "list")
    assert code == 0, err
    assert "every tape is active" in out

    code, out, err = cli(env, "tape", "disable", "T00001", "--reason", "sent for inspection")
    assert code == 0, err
    assert "tape T00001 is disabled" in out
    refused(env, "tape", "disable", "T00001", "--reason", "again", says="state: the tape is disabled already")
    refused(env, "tape", "break", "T99999", "--reason", "gone", says="tape: no tape 'T99999'")
    refused(env, "tape", "enable", "T00001", "--reason", "   ", says="reason: say why")
    refused(env, "tape", "enable", "T00001", says="--reason")

    code, out, err = cli(env, "tape", "show", "T00001")
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["state"], shown["reason"], shown["files"]) == ("disabled", "sent for inspection", {})
    assert shown["changed_by"].startswith("cli:")
    code, out, err = cli(env, "tape", "list")
    assert code == 0 and "T00001" in out and "disabled" in out, err

    code, out, err = cli(env, "tape", "enable", "T00001", "--reason", "inspection passed")
    assert code == 0, err
    trail = audit_trail(env)
    assert [(name, old, new, why) for _, name, old, new, why in trail] == [
        ("T00001", "active", "disabled", "sent for inspection"),
        ("T00001", "disabled", "active", "inspection passed"),
    ]
    assert all(who.startswith("cli:") for who, *_ in trail)


def test_drives_down_and_up_and_refusals(tmp_path: Path, sqlite_template: Path) -> None:
    env = env_for(tmp_path, sqlite_template)
    code, out, err = cli(env, "drive", "list")
    assert code == 0, err
    assert all(f"drive0{n}" in out for n in range(4)) and "down" not in out

    code, out, err = cli(env, "drive", "down", "drive02", "--now", "--reason", "cleaning")
    assert code == 0, err
    assert "drive drive02 goes down at once" in out
    refused(env, "drive", "down", "drive02", "--reason", "again", says="state: the drive is down already")
    refused(
        env, "drive", "down", "drive09", "--reason", "x", says="drive: the library has no drive 'drive09'"
    )
    code, out, err = cli(env, "drive", "list")
    assert code == 0 and "now" in out and "cleaning" in out, err

    code, out, err = cli(env, "drive", "up", "drive02", "--reason", "clean again")
    assert code == 0, err
    assert [(name, old, new) for _, name, old, new, _ in audit_trail(env)] == [
        ("drive02", "up", "down (now)"),
        ("drive02", "down", "up"),
    ]


def test_the_commands_are_listed() -> None:
    code, out, _ = cli({}, "tape")
    assert code == 0 and all(word in out for word in ("list", "show", "disable", "break", "enable"))
    code, out, _ = cli({}, "drive")
    assert code == 0 and all(word in out for word in ("list", "down", "up"))


SITE = """
[libraries.new]
adapter_options = { profile = "lto9", drives = 2 }

[libraries.old]
adapter_options = { profile = "lto7", drives = 2 }
"""


def test_on_a_site_of_two_libraries_a_name_in_both_needs_the_library(
    tmp_path: Path, sqlite_template: Path
) -> None:
    env = env_for(tmp_path, sqlite_template)
    config = tmp_path / "carousel.toml"
    config.write_text(SITE)
    env["CAROUSEL_CONFIG"] = str(config)
    # both simulated libraries hold a tape T00001 and name their drives drive00, drive01
    refused(env, "tape", "disable", "T00001", "--reason", "x", says="library: a tape 'T00001' is in several")
    refused(
        env, "tape", "disable", "T00001", "--library", "nope", "--reason", "x", says="library: no library"
    )
    refused(env, "drive", "down", "drive00", "--reason", "x", says="library: a drive 'drive00' is in several")
    assert audit_trail(env) == []

    code, out, err = cli(env, "tape", "disable", "T00001", "--library", "old", "--reason", "inspection")
    assert code == 0, err
    assert "tape T00001 (old) is disabled" in out
    code, out, err = cli(env, "drive", "down", "drive00", "--library", "new", "--reason", "firmware")
    assert code == 0, err
    assert "drive drive00 (new) goes down" in out
    code, out, err = cli(env, "tape", "show", "T00001", "--library", "new")
    assert code == 0, err
    assert json.loads(out)["library"] == "new" and json.loads(out)["state"] == "active"
    code, out, err = cli(env, "drive", "list", "--library", "new")
    assert code == 0, err
    assert "old" not in out and "firmware" in out

    engine = make_engine(env["CAROUSEL_DATABASE_URL"])
    try:
        with make_session_factory(engine)() as session:
            rows = session.execute(select(MediaAudit.library, MediaAudit.name, MediaAudit.new_state))
            assert sorted(tuple(row) for row in rows) == [
                ("new", "drive00", "down (after_mount)"),
                ("old", "T00001", "disabled"),
            ]
    finally:
        engine.dispose()
