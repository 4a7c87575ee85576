"""The studies' HTML report and the `carousel study` command."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from carousel.domain.clock import ManualClock
from carousel.domain.errors import InvalidInput
from studies.command import study
from studies.figures import new_figure, save_png
from studies.registry import study_names
from studies.report import REPORT_FILE, StudyRun, build_report, render_report, select_studies
from studies.result import Comparison, FigureFile, StudyResult, write_comparisons_csv, write_csv
from studies.sources import SOURCES, STAR_2006, cite


class _Links(HTMLParser):
    """Collects every img src and a href of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "img" and values.get("src"):
            self.images.append(values["src"] or "")
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")


def links_of(page: str) -> _Links:
    parser = _Links()
    parser.feed(page)
    return parser


def small_study(out_dir: Path) -> StudyResult:
    """A study result over real files: one figure, one table, one agreeing and one disagreeing row."""
    figure = new_figure(4.0, 3.0)
    axes = figure.subplots()
    axes.plot([1, 2, 3], [3, 1, 2])
    png = save_png(figure, out_dir / "small" / "curve.png")
    table = write_csv(out_dir / "small" / "points.csv", ("x", "y"), [(1, 3.0), (2, 1.0)])
    rows = (
        Comparison("efficiency <84 MB>", "003.txt", 8.0, 8.0, 7.9, "%", 1.0, "fitted"),
        Comparison("observed rate", "003.txt", 15.0, 15.0, 21.4, "MB/s", 2.7, "predicted", "model & seed"),
    )
    return StudyResult(
        name="small",
        title="A small study",
        tables=(table,),
        figures=(FigureFile(png, "A curve <with> a caption"),),
        comparisons=rows,
        findings=("a finding with <markup> & an ampersand",),
    )


STAR_FILE = STAR_2006.file


def cited_study(out_dir: Path) -> StudyResult:
    """A study whose rows cite a real source document by its file name, with headlines for an admin."""
    rows = (
        Comparison(
            "efficiency at 84 MB",
            f"{STAR_FILE} (File size effects on IO performance)",
            8,
            8,
            7.9,
            "%",
            1,
            "fitted",
        ),
        Comparison(
            "grouping gain",
            f"{STAR_FILE} (DataCarousel: grouping by tape ID)",
            20,
            20,
            19,
            "%",
            5,
            "replayed",
        ),
    )
    return StudyResult(
        name="cited",
        title="A study with sources",
        tables=(),
        figures=(),
        comparisons=rows,
        findings=("a detail for the curious",),
        headlines=("LTO-9 sites lose half their drive time below 23.8 GB at 10 files per mount.",),
    )


def test_the_page_links_every_figure_and_table_relatively(tmp_path: Path) -> None:
    result = small_study(tmp_path)
    combined = write_comparisons_csv(result.comparisons, tmp_path / "published_vs_reproduced.csv")
    page = render_report([StudyRun(result, 1.5)], tmp_path, combined, "2026-01-01 00:00 UTC")
    links = links_of(page)
    assert links.images == ["small/curve.png"]
    assert "small/points.csv" in links.links
    assert "published_vs_reproduced.csv" in links.links
    for target in (*links.images, *[link for link in links.links if not link.startswith("#")]):
        assert (tmp_path / target).is_file(), target


def test_the_page_escapes_text_and_marks_disagreements(tmp_path: Path) -> None:
    result = small_study(tmp_path)
    combined = write_comparisons_csv(result.comparisons, tmp_path / "published_vs_reproduced.csv")
    page = render_report([StudyRun(result, 1.5)], tmp_path, combined, "now")
    assert "<markup>" not in page and "&lt;markup&gt; &amp; an ampersand" in page
    assert "efficiency &lt;84 MB&gt;" in page
    assert "1 of 2 published figures reproduced within tolerance" in page
    assert len(re.findall(r'<tr class="disagrees">', page)) == 1
    assert "+6.4" in page  # 21.4 against 15: the difference column


def test_studies_are_selected_by_name_or_all() -> None:
    assert select_studies("all") == study_names()
    assert select_studies(["tape-efficiency", "tape-efficiency"]) == ("tape-efficiency",)
    with pytest.raises(InvalidInput, match="unknown study 'tape'"):
        select_studies("tape")
    with pytest.raises(InvalidInput, match="no study"):
        select_studies([])


def test_the_command_refuses_an_unknown_study_before_running_anything(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("study")(study)
    result = CliRunner().invoke(app, ["nothing-like-it", "--out", str(tmp_path / "out")])
    assert isinstance(result.exception, InvalidInput)
    assert not (tmp_path / "out").exists()


# A whole `carousel study all` takes minutes; each study runs end to end in its own test module (the policy
# study's module renders its section too), and "all" is tested as a selection above. The command and
# build_report are run here on the quickest study.
QUICK_STUDY = "worker-disks"


@pytest.mark.slow
def test_the_command_builds_a_report_whose_links_all_resolve(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("study")(study)
    result = CliRunner().invoke(app, [QUICK_STUDY, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"report: {tmp_path / REPORT_FILE}" in result.output.splitlines()  # whole: not wrapped off a tty
    page = (tmp_path / REPORT_FILE).read_text(encoding="utf-8")
    links = links_of(page)
    assert len(links.images) >= 5  # the worker disks' figures
    for target in (*links.images, *[link for link in links.links if not link.startswith("#")]):
        assert (tmp_path / target).is_file(), target
    assert f'id="{QUICK_STUDY}"' in page
    assert (tmp_path / "published_vs_reproduced.csv").is_file()


@pytest.mark.slow
def test_build_report_tells_progress_per_study(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    clock = ManualClock(datetime(2026, 5, 1, tzinfo=UTC))
    index = build_report(
        QUICK_STUDY, tmp_path, lambda name, step, done, total: seen.append((name, done, total)), clock
    )
    assert index == tmp_path / REPORT_FILE
    assert {name for name, _, _ in seen} == {QUICK_STUDY}
    assert seen[-1][1] == seen[-1][2]
    assert "Generated 2026-05-01 00:00 UTC" in index.read_text(encoding="utf-8")


def test_the_page_leads_with_the_findings_for_an_admin(tmp_path: Path) -> None:
    runs = [StudyRun(small_study(tmp_path), 1.5), StudyRun(cited_study(tmp_path), 2.0)]
    combined = write_comparisons_csv(
        [r for run in runs for r in run.result.comparisons], tmp_path / "all.csv"
    )
    page = render_report(runs, tmp_path, combined, "now")
    headline = page.index("LTO-9 sites lose half their drive time below 23.8 GB")
    first_study = page.index('<section id="small">')
    table = page.index('<section id="published-vs-reproduced">')
    assert page.index('<section id="findings">') < headline < first_study < table
    assert page.index("a detail for the curious") > first_study  # the details follow, in the study's section
    findings = page[page.index('<section id="findings">') : page.index("</section>", headline)]
    assert "3 of 4 published figures reproduced within tolerance" in findings
    assert '<a href="#cited">' in findings and '<a href="#published-vs-reproduced">' in findings


def test_sources_are_named_by_title_not_by_file_name(tmp_path: Path) -> None:
    result = cited_study(tmp_path)
    combined = write_comparisons_csv(result.comparisons, tmp_path / "all.csv")
    page = render_report([StudyRun(result, 1.0)], tmp_path, combined, "now")
    sources = page[page.index('<section id="sources">') : page.index('<section id="cited">')]
    assert f"<cite>{STAR_2006.title}</cite>" in sources
    assert page.count(STAR_FILE) == 1 and STAR_FILE in sources  # once, to find the transcription by
    table = page[page.index('<section id="published-vs-reproduced">') :]
    assert "<td>STAR 2006, File size effects on IO performance</td>" in table
    assert "<td>STAR 2006, DataCarousel: grouping by tape ID</td>" in table


def test_cite_names_every_source_document_by_its_short_name() -> None:
    assert cite("000_5f99fa0da61b6dda.txt primaryresults") == "Glasgow CHEP 2010, primary results"
    assert cite("002_17936f0b5c29b893.txt slide 'Summary and Discussion'") == (
        "BNL CHEP 2009, slide 'Summary and Discussion'"
    )
    assert cite(f"{STAR_FILE} (File size effects on IO performance, observed)") == (
        "STAR 2006, File size effects on IO performance, observed"
    )
    assert cite("001_f186e70e6529aa00.txt") == "GridPP wiki"
    assert cite("a document of its own") == "a document of its own"
    assert len(SOURCES) == 4 and all(source.title and source.authors for source in SOURCES.values())
