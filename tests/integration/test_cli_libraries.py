"""`carousel scheduler` over a site of two libraries: it runs both (the banner names each, the cycle reports
the site's health); a library whose adapter cannot be built stops it in one line naming the library, exit
code 2. `carousel report --library` reports one library, and refuses one the site has not in one line.
`carousel policy dry-run` plans each library and reports each beside the site."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.cli.strays import WHAT_TO_DO
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.states import FileState
from tests.conftest import EPOCH
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.rows import queued as queued_row

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


def test_a_site_of_one_named_library_names_it(tmp_path: Path, sqlite_template: Path) -> None:
    """Its rows carry the name: the banner says it, as for several."""
    one = SITE.split("[libraries.old]", maxsplit=1)[0]
    code, out, err = _run(tmp_path, sqlite_template, one)
    assert code == 0, err
    banner = next(line for line in out.splitlines() if line.startswith("library: "))
    assert banner.startswith("library: new: simulated lto9 library"), banner


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


def test_the_library_s_files_of_a_site_each_library_in_turn_or_one(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """`carousel library files` lists each library's paths in turn (with --long, the library too), or one
    library's with --library; an unknown library or a cartridge no library holds is one line, exit 2."""
    code, out, err = _run(tmp_path, sqlite_template, SITE, "library", "files", "--limit", "12", "--long")
    assert code == 0, err
    libraries = [line.split("\t")[3] for line in out.splitlines()]
    assert libraries == ["new"] * 12  # the first library's first
    code, out, err = _run(tmp_path, sqlite_template, SITE, "library", "files", "--library", "old", "-l")
    assert code == 0, err
    assert {line.split("\t")[3] for line in out.splitlines()} == {"old"}
    code, out, err = _run(tmp_path, sqlite_template, SITE, "library", "files", "--limit", "400")
    assert code == 0, err
    assert len(out.splitlines()) == 400  # both libraries' 200 files each
    code, out, err = _run(tmp_path, sqlite_template, SITE, "library", "files", "--library", "nope")
    assert (code, out) == (2, "")
    assert err == "carousel: --library: 'nope' is not a library of this site (its libraries: new, old)\n"
    code, out, err = _run(tmp_path, sqlite_template, SITE, "library", "files", "--tape", "T99999")
    assert (code, out) == (2, "")
    assert err == "carousel: --tape T99999: no such cartridge in the library\n"


def _add_files_of(database: Path, library: str, queued: int, in_flight: int) -> None:
    engine = make_engine(f"sqlite:///{database}")
    try:
        rows = [
            queued_row(
                f"/{library}/{n}",
                "T1",
                n,
                EPOCH,
                state=FileState.QUEUED if n < queued else FileState.SUBMITTED,
            )
            for n in range(queued + in_flight)
        ]
        for row in rows:
            row.library = library
        add_request(make_session_factory(engine), rows, EPOCH)
    finally:
        engine.dispose()


def test_the_start_warns_of_each_library_taken_out_of_the_settings_that_files_wait_for(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """Files of `gone` (3 queued, 1 handed over) and of `lost` (1 queued), libraries the settings no longer
    name: the banner and the log name each with its files and what to do; `old`, still named, is not named."""
    database = tmp_path / "site.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    _add_files_of(database, "gone", 3, 1)
    _add_files_of(database, "lost", 1, 0)
    _add_files_of(database, "old", 2, 0)
    config = tmp_path / "carousel.toml"
    config.write_text(SITE)
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_CONFIG": str(config)}
    for _ in range(2):  # the changes not folded yet, then (the cycle folded them) the tape queues
        result = runner.invoke(app, ["scheduler", "--once"], env=env)
        assert result.exit_code == 0, result.stderr
        warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
        assert warnings == [
            f"warning: library gone is not in the settings, but 4 files wait for it (3 queued, 1 in flight):"
            f" no cycle reads them; {WHAT_TO_DO}",
            f"warning: library lost is not in the settings, but 1 file waits for it (1 queued, 0 in flight):"
            f" no cycle reads them; {WHAT_TO_DO}",
        ]
        logged = [line for line in result.stderr.splitlines() if "the settings do not name" in line]
        assert len(logged) == 2 and "WARN" in logged[0].upper()
        assert "library=gone" in logged[0] and "queued=3" in logged[0] and "in_flight=1" in logged[0]
        assert "library=lost" in logged[1] and "queued=1" in logged[1] and "in_flight=0" in logged[1]
