"""Where the real `carousel` command keeps its database: the data directory, wherever the command is started,
and every error about the database names it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.clients.support import carousel_program


def environment(home: Path, **settings: str) -> dict[str, str]:
    """This environment without CAROUSEL_* settings, with a home (and XDG data home) of the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAROUSEL_", "XDG_"))}
    # COLUMNS: rich wraps output to a pipe at 80 columns, which would split the long paths checked here
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), COLUMNS="500", **settings)
    return env


def carousel(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [carousel_program(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("carousel: ")
    return lines[0]


def test_the_database_is_the_same_wherever_a_command_starts(tmp_path: Path) -> None:
    env = environment(tmp_path / "home")
    database = tmp_path / "home" / "data" / "carousel" / "carousel.sqlite3"

    # before any upgrade: the command names the database it looked for, and makes nothing anywhere
    line = one_line_error(carousel(tmp_path / "elsewhere", env, "policy", "show"))
    assert f"database sqlite:///{database} does not exist" in line
    assert "run `carousel db upgrade`" in line
    assert not database.exists()
    assert list((tmp_path / "elsewhere").iterdir()) == []

    upgraded = carousel(tmp_path / "checkout", env, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"database sqlite:///{database} is at revision" in upgraded.stdout
    assert database.is_file()
    assert list((tmp_path / "checkout").iterdir()) == []

    # another directory sees the same database: the policy set from one is shown from the other
    changed = carousel(tmp_path / "checkout", env, "policy", "set", "fifo", "--reason", "arrival order")
    assert changed.returncode == 0, changed.stderr
    shown = carousel(tmp_path / "elsewhere", env, "policy", "show")
    assert shown.returncode == 0, shown.stderr
    assert '"policy": "fifo"' in shown.stdout


def test_the_data_dir_setting_moves_the_database(tmp_path: Path) -> None:
    env = environment(tmp_path / "home", CAROUSEL_DATA_DIR="state")  # relative: to where the command starts
    upgraded = carousel(tmp_path / "a", env, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert (tmp_path / "a" / "state" / "carousel.sqlite3").is_file()
    assert not (tmp_path / "home" / "data").exists()
    line = one_line_error(carousel(tmp_path / "b", env, "report", "library"))
    assert f"database sqlite:///{tmp_path / 'b' / 'state' / 'carousel.sqlite3'} does not exist" in line

    line = one_line_error(
        carousel(tmp_path / "a", environment(tmp_path, CAROUSEL_DATA_DIR=" "), "db", "upgrade")
    )
    assert "data_dir" in line


def test_a_database_on_another_schema_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite3"
    empty.touch()
    env = environment(tmp_path / "home", CAROUSEL_DATABASE_URL=f"sqlite:///{empty}")
    for command in (
        ["serve", "--port", "0"],
        ["scheduler", "--once"],
        ["policy", "audit"],
        ["report", "mounts"],
    ):
        line = one_line_error(carousel(tmp_path, env, *command))
        assert f"database sqlite:///{empty}: schema is at empty" in line, command
        assert "run `carousel db upgrade`" in line


@pytest.mark.parametrize("command", [["db", "upgrade"], ["scheduler", "--once"]])
def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path, command: list[str]) -> None:
    url = "postgresql+psycopg://carousel:s3cret@127.0.0.1:9/carousel"  # port 9 (discard): nobody answers
    line = one_line_error(
        carousel(tmp_path, environment(tmp_path / "home", CAROUSEL_DATABASE_URL=url), *command)
    )
    assert "database postgresql+psycopg://carousel:***@127.0.0.1:9/carousel cannot be reached" in line
    assert "s3cret" not in line


def test_a_database_directory_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.touch()
    url = f"sqlite:///{blocker}/carousel.sqlite3"
    line = one_line_error(
        carousel(tmp_path, environment(tmp_path / "home", CAROUSEL_DATABASE_URL=url), "db", "upgrade")
    )
    assert f"database {url}: cannot create {blocker}" in line
