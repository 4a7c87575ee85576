"""The studies' HTML report: `build_report` runs studies and writes out_dir/index.html.

The page opens with what a storage admin should take from the studies (each study's headlines) and the
documents they reproduce, named by title; then each study's findings, figures (PNG, with captions) and links
to the CSV tables behind them; last, one "published vs reproduced" table for every study run (also written
as a CSV beside it). Every path in the page is relative, so the directory can be moved or served as it is.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from carousel.domain.clock import Clock, SystemClock
from carousel.domain.errors import InvalidInput
from studies.registry import run_study, study_names
from studies.result import Comparison, StudyResult, write_comparisons_csv
from studies.sources import SOURCES, Source, cite

REPORT_FILE = "index.html"
COMBINED_CSV = "published_vs_reproduced.csv"
ALL = "all"


class StudyProgress(Protocol):
    """Told after each step of each study: which study, what it is doing, and how far it is."""

    def __call__(self, study: str, step: str, done: int, total: int, /) -> None: ...


def no_study_progress(study: str, step: str, done: int, total: int) -> None:
    """A StudyProgress that shows nothing."""


@dataclass(frozen=True)
class StudyRun:
    result: StudyResult
    seconds: float


def select_studies(selection: str | Sequence[str]) -> tuple[str, ...]:
    """ "all", one name, or several names; unknown names are refused before anything runs."""
    known = study_names()
    if selection == ALL:
        return known
    names = (selection,) if isinstance(selection, str) else tuple(selection)
    if not names:
        raise InvalidInput("no study named; give a study name or 'all'", field="study")
    for name in names:
        if name not in known:
            raise InvalidInput(
                f"unknown study {name!r}; known studies: {', '.join(known)} (or 'all')", field="study"
            )
    return tuple(dict.fromkeys(names))


def build_report(
    studies: str | Sequence[str],
    out_dir: Path,
    progress: StudyProgress = no_study_progress,
    clock: Clock | None = None,
) -> Path:
    """Run the studies (each into out_dir/<name>/) and write out_dir/index.html; returns its path."""
    names = select_studies(studies)
    timer = clock or SystemClock()
    out_dir.mkdir(parents=True, exist_ok=True)
    started = timer.now()
    runs = []
    for name in names:

        def tell(step: str, done: int, total: int, study: str = name) -> None:
            progress(study, step, done, total)

        begun = timer.now()
        result = run_study(name, out_dir, tell)
        runs.append(StudyRun(result, (timer.now() - begun).total_seconds()))
    combined = write_comparisons_csv(
        [row for run in runs for row in run.result.comparisons], out_dir / COMBINED_CSV
    )
    page = render_report(runs, out_dir, combined, started.strftime("%Y-%m-%d %H:%M UTC"))
    path = out_dir / REPORT_FILE
    path.write_text(page, encoding="utf-8")
    return path


# --- rendering ------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1, h2, h3 { font-weight: 600; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.number { text-align: right; white-space: nowrap; }
tr.disagrees td { background: #fde8e6; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; max-width: 1100px; }
li { margin: 0.3em 0; }
#findings { background: #f4f8fb; border: 1px solid #cfdce8; border-radius: 6px; padding: 0.5em 1.5em 1em; }
#findings li { font-size: 1.05em; }
.file { color: #666; font-size: 0.85em; }
"""


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def _href(path: Path, out_dir: Path) -> str:
    return _text(Path(os.path.relpath(path, out_dir)).as_posix())


def _number(value: float, signed: bool = False) -> str:
    if math.isnan(value):
        return "n/a"
    tidy = round(value, 9)  # float noise such as 1e-13 reads as 0
    if tidy == 0:
        return "0"
    return f"{tidy:+.4g}" if signed else f"{tidy:.4g}"


def _comparison_row(study: str, row: Comparison) -> str:
    # (content already escaped, right-aligned number?)
    cells = (
        (_text(study), False),
        (_text(row.quantity), False),
        (_text(cite(row.source)), False),
        (_text(row.published), True),
        (_number(row.reproduced), True),
        (_number(row.difference, signed=True), True),
        (_text(row.unit), False),
        (_number(row.tolerance), True),
        ("yes" if row.agrees else "<strong>no</strong>", False),
        (_text(row.basis), False),
        (_text(row.note), False),
    )
    rendered = "".join(
        f'<td class="number">{content}</td>' if numeric else f"<td>{content}</td>"
        for content, numeric in cells
    )
    css = "" if row.agrees else ' class="disagrees"'
    return f"<tr{css}>{rendered}</tr>"


def _agreement(runs: Sequence[StudyRun]) -> str:
    rows = [row for run in runs for row in run.result.comparisons]
    agreeing = sum(1 for row in rows if row.agrees)
    return f"{agreeing} of {len(rows)} published figures reproduced within tolerance"


def _headlines(runs: Sequence[StudyRun]) -> str:
    studies = "".join(
        f"<h3>{_text(run.result.title)}</h3><ul>"
        + "".join(f"<li>{_text(line)}</li>" for line in run.result.headlines)
        + f'</ul><p><a href="#{_text(run.result.name)}">How the study shows it</a></p>'
        for run in runs
        if run.result.headlines
    )
    return (
        '<section id="findings"><h2>What a storage admin should know</h2>'
        f"{studies}<p>{_agreement(runs)} "
        '(<a href="#published-vs-reproduced">the table</a>).</p></section>'
    )


def _cited(runs: Sequence[StudyRun]) -> list[Source]:
    """The documents the runs' comparisons cite, in the order they are first cited."""
    files = dict.fromkeys(row.source.partition(" ")[0] for run in runs for row in run.result.comparisons)
    return [SOURCES[file] for file in files if file in SOURCES]


def _sources(runs: Sequence[StudyRun]) -> str:
    cited = _cited(runs)
    if not cited:
        return ""
    items = "".join(
        f"<li><strong>{_text(source.short)}</strong>: {_text(source.authors)}, "
        f"<cite>{_text(source.title)}</cite>, {_text(source.published)}. {_text(source.gives)}. "
        f'<span class="file">(transcribed from {_text(source.file)})</span></li>'
        for source in cited
    )
    return f'<section id="sources"><h2>Sources</h2><ul>{items}</ul></section>'


def _comparisons(runs: Sequence[StudyRun], out_dir: Path, combined: Path) -> str:
    rows = [(run.result.name, row) for run in runs for row in run.result.comparisons]
    header = "".join(
        f"<th>{name}</th>"
        for name in (
            "study",
            "quantity",
            "source",
            "published",
            "reproduced",
            "difference",
            "unit",
            "tolerance",
            "agrees",
            "basis",
            "note",
        )
    )
    body = "\n".join(_comparison_row(study, row) for study, row in rows)
    return (
        '<section id="published-vs-reproduced"><h2>Published vs reproduced</h2>'
        f"<p>{_agreement(runs)}. The difference is to the nearest published value (zero inside a "
        "published range). "
        f'<a href="{_href(combined, out_dir)}">CSV</a></p>'
        f"<table><thead><tr>{header}</tr></thead><tbody>\n{body}\n</tbody></table></section>"
    )


def _study(run: StudyRun, out_dir: Path) -> str:
    result = run.result
    findings = "".join(f"<li>{_text(finding)}</li>" for finding in result.findings)
    figures = "\n".join(
        f'<figure><img src="{_href(figure.path, out_dir)}" alt="{_text(figure.caption)}">'
        f"<figcaption>{_text(figure.caption)}</figcaption></figure>"
        for figure in result.figures
    )
    tables = "".join(
        f'<li><a href="{_href(table, out_dir)}">{_text(table.name)}</a></li>' for table in result.tables
    )
    return (
        f'<section id="{_text(result.name)}"><h2>{_text(result.title)}</h2>'
        f"<p>Study <code>{_text(result.name)}</code>, computed in {run.seconds:.1f} s.</p>"
        + (f"<h3>Findings</h3><ul>{findings}</ul>" if findings else "")
        + f"<h3>Figures</h3>{figures}<h3>Tables</h3><ul>{tables}</ul></section>"
    )


def render_report(runs: Sequence[StudyRun], out_dir: Path, combined: Path, generated: str) -> str:
    """The page for studies already run; `combined` is the CSV of every comparison row."""
    contents = "".join(
        f'<li><a href="#{_text(run.result.name)}">{_text(run.result.title)}</a></li>' for run in runs
    )
    sections = "\n".join(_study(run, out_dir) for run in runs)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>carousel studies</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>carousel studies</h1><p>Generated {_text(generated)}.</p>\n"
        f"{_headlines(runs)}\n{_sources(runs)}\n"
        f'<h2>Contents</h2><ul>{contents}<li><a href="#published-vs-reproduced">Published vs reproduced</a>'
        f"</li></ul>\n{sections}\n{_comparisons(runs, out_dir, combined)}\n</body></html>\n"
    )
