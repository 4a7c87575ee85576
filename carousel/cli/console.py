"""What every command shares: where it prints, and the failure it reports in one line (exit status 2).

On a terminal, output fits the terminal's width. Into a pipe, a file or a log, rich would wrap at 80
columns and split URLs and paths in two; there lines are never wrapped. Decided by the stream alone, not by
COLUMNS: a console is made once, at import, and an environment seen then may not be the one it prints in."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console

ERROR_EXIT = 2
UNWRAPPED_WIDTH = 100_000  # rich lays out to a width; this one no line reaches


def console_for(stream: TextIO, *, stderr: bool = False) -> Console:
    """A console on `stream` (sys.stdout or sys.stderr, looked up when printing), wrapping only on a
    terminal."""
    wraps = _isatty(stream)
    return Console(
        stderr=stderr,
        highlight=False,
        width=None if wraps else UNWRAPPED_WIDTH,
        soft_wrap=not wraps,
    )


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


out = console_for(sys.stdout)
err = console_for(sys.stderr, stderr=True)


class CliFailure(Exception):
    """A failure to report to the user in one line."""
