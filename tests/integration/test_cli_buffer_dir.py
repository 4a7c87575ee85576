"""The service refuses to start with a disk buffer it cannot write to: one line naming the directory, exit 2,
before any database or library is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_cli_data_dir import carousel, environment, one_line_error


@pytest.mark.parametrize(
    "command", [["scheduler", "--once"], ["serve", "--port", "0"], ["api", "--port", "0"]]
)
def test_an_unwritable_buffer_directory_stops_the_start(tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "a-file"  # a file where the buffer's directory should be: unwritable even for root
    blocker.touch()
    env = environment(
        tmp_path / "home", CAROUSEL_BUFFER__ENABLED="true", CAROUSEL_BUFFER__DIRECTORY=str(blocker / "buffer")
    )
    line = one_line_error(carousel(tmp_path, env, *command))
    assert f"buffer directory {blocker / 'buffer'} is not writable" in line


def test_the_buffer_is_made_beside_the_database_by_default(tmp_path: Path) -> None:
    env = environment(
        tmp_path / "home", CAROUSEL_DATA_DIR=str(tmp_path / "data"), CAROUSEL_BUFFER__ENABLED="true"
    )
    assert carousel(tmp_path, env, "db", "upgrade").returncode == 0
    done = carousel(tmp_path, env, "scheduler", "--once")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "buffer").is_dir()
    assert (tmp_path / "data" / "buffer.incoming").is_dir()
