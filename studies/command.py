"""`carousel study NAME|all --out DIR`: run studies and write their HTML report, with a progress bar.

Added to the `carousel` command line as a plug-in (the entry point group "carousel.commands", declared in
pyproject.toml): the command line does not import the studies. The command line loads this module at every
start, so the report (which pulls in matplotlib) is imported inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from carousel.cli import console as cli_console  # the command line's consoles: unwrapped off a terminal


def study(
    name: Annotated[str, typer.Argument(help="A study name (tape-efficiency, worker-disks, ...) or 'all'.")],
    out: Annotated[
        Path, typer.Option("--out", help="Directory for the report (index.html), tables and figures.")
    ],
) -> None:
    """Run a study (or all of them) and write an HTML report with its figures and tables."""
    from studies.report import build_report, select_studies  # noqa: PLC0415 - keeps matplotlib out of every start

    names = select_studies(name)  # refuses an unknown name before anything runs
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=cli_console.err, transient=False) as bar:
        tasks: dict[str, TaskID] = {}

        def show(study_name: str, step: str, done: int, total: int) -> None:
            if study_name not in tasks:
                tasks[study_name] = bar.add_task(study_name, total=total)
            bar.update(tasks[study_name], completed=done, total=total, description=f"{study_name}: {step}")

        index = build_report(names, out, show)
    cli_console.out.print(f"report: {index}", markup=False)
