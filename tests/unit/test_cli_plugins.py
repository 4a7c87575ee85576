"""Commands other packages add to `carousel` through the entry point group "carousel.commands": the studies'
`carousel study` is one, found through the installed entry point; a broken plug-in fails when run, naming
itself, and leaves the other commands alone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from carousel.cli.app import OneLineErrors, app
from carousel.cli.plugins import ENTRY_POINT_GROUP, add_plugin_commands


def install_distribution(site: Path, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """A distribution as pip lays it out in site-packages: its metadata, its entry points, its modules."""
    info = site / "plugged-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugged\nVersion: 1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}", encoding="utf-8")
    for name, source in modules.items():
        (site / f"{name}.py").write_text(source, encoding="utf-8")


def test_carousel_study_comes_from_the_studies_plug_in(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["study", "nothing-like-it", "--out", str(out)])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("carousel: unknown study 'nothing-like-it'")
    assert not out.exists()


def test_a_plug_in_of_another_distribution_becomes_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hello = 'import typer\n\ndef hello(name: str) -> None:\n    typer.echo(f"hello {name}")\n'
    install_distribution(tmp_path, {"hello": "plugged_hello:hello"}, {"plugged_hello": hello})
    monkeypatch.syspath_prepend(tmp_path)
    commands = typer.Typer()
    try:
        add_plugin_commands(commands)
        result = CliRunner().invoke(commands, ["hello", "tape"])
    finally:
        sys.modules.pop("plugged_hello", None)  # imported from a directory that goes with the test
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello tape\n"


def test_a_plug_in_that_fails_to_load_fails_in_one_line_when_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(tmp_path, {"broken": "plugged_missing:command"}, {})
    monkeypatch.syspath_prepend(tmp_path)
    commands = typer.Typer(cls=OneLineErrors)
    commands.command("status")(lambda: typer.echo("still here"))
    add_plugin_commands(commands)
    failed = CliRunner().invoke(commands, ["broken", "all", "--out", str(tmp_path / "out")])
    assert failed.exit_code == 2
    assert failed.stderr == (
        "carousel: command plug-in 'broken' (plugged_missing:command) failed to load: "
        "No module named 'plugged_missing'\n"
    )
    assert CliRunner().invoke(commands, ["status"]).stdout == "still here\n"  # the others keep working
