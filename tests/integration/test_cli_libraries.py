"""`carousel scheduler` over a site of two libraries: it runs both (the banner names each, the cycle reports
the site's health); a library whose adapter cannot be built stops it in one line naming the library, exit
code 2. `carousel report --library` reports one library, and refuses one the site has not in one line.
`carousel policy dry-run` plans each library and reports each beside the site."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from carousel.cli.app import app

runner = CliRunner()

SITE = """
[libraries.new]
adapter_options = { profile = "lto9", drives = 8 }

[libraries.old]
adapter_options = { profile = "lto7", drives = 4 }
"""


def _run(tmp_path: Path, sqlite_template: Path, text: str, *args: str) -> tuple[int, str, str]:
    database = tmp_path / "site.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    config = tmp_path / "carousel.toml"
    config.write_text(text)
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_CONFIG": str(config)}
    result = runner.invoke(app, list(args or ("scheduler", "--once")), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_scheduler_runs_every_library_of_the_site(tmp_path: Path, sqlite_template: Path) -> None:
    code, out, err = _run(tmp_path, sqlite_template, SITE)
    assert code == 0, err
    banner = next(line for line in out.splitlines() if line.startswith("library: "))
    assert "new: simulated lto9 library" in banner and "8 drives" in banner
    assert "; old: simulated lto7 library" in banner and "4 drives" in banner
    assert "health ONLINE" in out and "claimed 0" in out


def test_a_library_that_cannot_be_built_stops_the_start_in_one_line(
    tmp_path: Path, sqlite_template: Path
) -> None:
    code, out, err = _run(tmp_path, sqlite_template, SITE + '\n[libraries.third]\nadapter = "nope"\n')
    assert code == 2
    assert out == ""
    assert err == "carousel: library third: unknown adapter 'nope': available are command, simulated\n"


def test_a_report_of_one_library_of_the_site(tmp_path: Path, sqlite_template: Path) -> None:
    code, out, err = _run(tmp_path, sqlite_template, SITE, "report", "mounts", "--library", "old")
    assert code == 0, err
    assert '"kind": "mounts"' in out
    code, out, err = _run(tmp_path, sqlite_template, SITE, "report", "mounts", "--library", "nope")
    assert code == 2
    assert err == "carousel: --library: 'nope' is not a library of this site (its libraries: new, old)\n"


def test_a_dry_run_of_the_site_reports_each_library_and_the_site(
    tmp_path: Path, sqlite_template: Path
) -> None:
    code, out, err = _run(tmp_path, sqlite_template, SITE, "policy", "dry-run", "cta")
    assert code == 0, err
    assert "0 tapes with work" in out
    rows = [line.replace("│", " ").split() for line in out.splitlines() if "e: " in line]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("new", "candidate:", "cta"),
        ("old", "candidate:", "cta"),
        ("site", "candidate:", "cta"),
        ("new", "active:", "carousel"),
        ("old", "active:", "carousel"),
        ("site", "active:", "carousel"),
    ]
