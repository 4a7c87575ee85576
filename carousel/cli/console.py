"""What every command shares: where it prints, and the failure it reports in one line (exit status 2)."""

from __future__ import annotations

from rich.console import Console

ERROR_EXIT = 2

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class CliFailure(Exception):
    """A failure to report to the user in one line."""
