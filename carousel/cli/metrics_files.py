"""Where `carousel api --workers N`'s workers write their prometheus figures: a directory of the temporary
directory, fresh at each start (a file of a past run would count again) and removed at a normal stop.

Its name says whose it is, `carousel-metrics-<supervisor pid>-<random>`: a supervisor killed outright
(SIGKILL, the OOM killer) cannot remove its own, so the next one to start removes those of this user whose
supervisor no longer runs. A pid still running is left alone even when it is no longer a supervisor (the
pid was reused): a directory kept too long costs some disk, one removed under a live supervisor costs its
figures.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

PREFIX = "carousel-metrics-"
_NAMED = re.compile(rf"{re.escape(PREFIX)}([1-9][0-9]*)-")


@contextmanager
def metrics_directory() -> Iterator[Path]:
    """A fresh directory named for this process, removed on leaving; the dead supervisors' go first."""
    remove_abandoned(Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as directory:
        yield Path(directory)


def remove_abandoned(parent: Path) -> None:
    """Remove the directories in `parent` named by `metrics_directory`, owned by this user, whose supervisor
    process no longer runs. A failure to remove one is a log line: the service starts all the same."""
    try:
        entries = list(parent.iterdir())
    except OSError as exc:
        log.warning("cannot look for abandoned metrics directories", directory=str(parent), error=str(exc))
        return
    for entry in entries:
        named = _NAMED.match(entry.name)
        if named is None or not _owned_directory(entry) or _running(int(named.group(1))):
            continue
        try:
            shutil.rmtree(entry)
        except FileNotFoundError:
            continue  # another supervisor starting beside this one removed it first
        except OSError as exc:
            log.warning(
                "cannot remove a dead supervisor's metrics directory", directory=str(entry), error=str(exc)
            )
            continue
        log.info("removed a dead supervisor's metrics directory", directory=str(entry))


def _owned_directory(entry: Path) -> bool:
    """A directory itself (not a link to one) of this user."""
    try:
        status = entry.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OverflowError:
        return True  # no pid the kernel hands out: not ours to judge, so kept
    return True
