"""The metrics directories of `carousel api --workers N`: a supervisor starting removes those of supervisors
no longer running, and nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import structlog

from carousel.cli.metrics_files import PREFIX, metrics_directory, remove_abandoned


def _dead_pid() -> int:
    """The pid of a process that ran and was reaped (the kernel hands pids out in turn: not soon again)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _directory(parent: Path, name: str) -> Path:
    directory = parent / name
    directory.mkdir()
    (directory / "counter_1234.db").write_bytes(b"figures")  # not empty: removal is of the whole tree
    return directory


def test_a_dead_supervisors_directory_is_removed_and_the_rest_kept(tmp_path: Path) -> None:
    dead = _directory(tmp_path, f"{PREFIX}{_dead_pid()}-abc123")
    live = _directory(tmp_path, f"{PREFIX}{os.getppid()}-def456")
    unrelated = [
        _directory(tmp_path, f"{PREFIX}x1y2z3ab"),  # named without a pid
        _directory(tmp_path, f"{PREFIX}{_dead_pid()}"),  # no random part: not of this naming
        _directory(tmp_path, f"other-{_dead_pid()}-abc123"),
    ]
    a_file = tmp_path / f"{PREFIX}{_dead_pid()}-file"
    a_file.write_text("not a directory")

    remove_abandoned(tmp_path)

    assert not dead.exists()
    assert live.is_dir() and any(live.iterdir())
    assert all(directory.is_dir() for directory in unrelated)
    assert a_file.is_file()


def test_a_link_named_like_a_dead_supervisors_directory_is_kept(tmp_path: Path) -> None:
    target = _directory(tmp_path, "elsewhere")
    link = tmp_path / f"{PREFIX}{_dead_pid()}-abc123"
    link.symlink_to(target, target_is_directory=True)

    remove_abandoned(tmp_path)

    assert link.is_symlink()
    assert any(target.iterdir())


def test_a_directory_that_cannot_be_removed_is_a_log_line_and_the_others_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stuck = _directory(tmp_path, f"{PREFIX}{_dead_pid()}-abc123")
    dead = _directory(tmp_path, f"{PREFIX}{_dead_pid()}-def456")
    remove = shutil.rmtree

    def refused_for_stuck(path: Path) -> None:  # as on a read-only or busy file system
        if Path(path) == stuck:
            raise PermissionError(13, "Permission denied", str(path))
        remove(path)

    monkeypatch.setattr(shutil, "rmtree", refused_for_stuck)
    with structlog.testing.capture_logs() as logs:
        remove_abandoned(tmp_path)

    assert stuck.is_dir()
    assert not dead.exists()
    refusals = [entry for entry in logs if entry["log_level"] == "warning"]
    assert [entry["directory"] for entry in refusals] == [str(stuck)]
    assert "Permission denied" in refusals[0]["error"]


def test_another_users_directory_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = _directory(tmp_path, f"{PREFIX}{_dead_pid()}-abc123")
    # seen by another user: only root could chown it away, and the test runs as any user
    other_user = os.getuid() + 1
    monkeypatch.setattr(os, "getuid", lambda: other_user)

    remove_abandoned(tmp_path)

    assert theirs.is_dir() and any(theirs.iterdir())


def test_a_supervisors_directory_says_whose_it_is_and_goes_at_its_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # what TMPDIR sets
    dead = _directory(tmp_path, f"{PREFIX}{_dead_pid()}-abc123")

    with metrics_directory() as directory:
        assert not dead.exists()
        assert directory.parent == tmp_path
        assert directory.name.startswith(f"{PREFIX}{os.getpid()}-")
        (directory / "counter_1234.db").write_bytes(b"figures")

    assert not directory.exists()
