"""`carousel policy show|set|audit|replay|dry-run` on a real SQLite database: a change validated and
audited as through the API, a refused one a one-line error (exit 2) that changes nothing; the recorded
history replayed under a candidate; a dry run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import build_simulated_adapter
from policies.registry import build_policy
from tests.integration.scheduler.rows import add_request, queued

runner = CliRunner()


def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_show_set_audit_and_a_refusal(tmp_path: Path, sqlite_template: Path) -> None:
    database = tmp_path / "policy.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_POLICY": "fifo"}

    code, out, err = cli(env, "policy", "show")
    assert code == 0, err
    assert json.loads(out)["policy"] == "fifo" and json.loads(out)["version"] == 0

    options = tmp_path / "carousel.toml"
    options.write_text("patience = 2.0\n[fair_share.weights]\natlas = 3\ncms = 1\n")
    code, out, err = cli(
        env, "policy", "set", "carousel", "--options-file", str(options), "--reason", "bulk campaign"
    )
    assert code == 0, err
    assert "version 1" in out and "policy_options.fair_share: (unset) -> " in out

    code, out, err = cli(env, "policy", "set", "carousel", "--options", '{"patience": -1}', "--reason", "x")
    assert code == 2
    assert err.startswith("carousel: ") and "options.patience" in err and len(err.strip().splitlines()) == 1

    code, out, _ = cli(env, "policy", "show")
    shown = json.loads(out)
    assert shown["policy"] == "carousel" and shown["version"] == 1
    assert shown["options"] == {"patience": 2.0, "fair_share": {"weights": {"atlas": 3, "cms": 1}}}
    assert shown["changed_by"].startswith("cli:")

    code, out, err = cli(env, "policy", "audit")
    assert code == 0, err
    assert "bulk campaign" in out and out.count("cli:") == 1


LIBRARY = {
    "profile": "lto8",
    "drives": 2,
    "catalogue": {"generate": {"seed": 5, "cartridges": 6, "files_per_cartridge": 10}},
    "scale": 100.0,
}


def recorded_history(database_url: str) -> int:
    """An hour ago, three requests served by the scheduler on the simulated library; returns the files."""
    settings = Settings(database_url=database_url, adapter_options=LIBRARY, policy="fifo")
    engine = make_engine(settings)
    factory = make_session_factory(engine)
    clock = ManualClock(datetime.now(UTC) - timedelta(hours=1))
    adapter = build_simulated_adapter(settings.adapter_options, clock)
    cycle = Cycle(settings, factory, adapter, build_policy("fifo"), clock)
    entries = list(adapter.library.catalogue.values())
    asked = 0
    for first in range(3):
        picks = entries[first::7][:6]
        rows = [queued(e.path, e.tape, e.position_bytes, clock.now(), size=e.size_bytes) for e in picks]
        add_request(factory, rows, clock.now())
        asked += len(rows)
        for _ in range(10):
            cycle.run_once()
            clock.advance(2.0)
    for _ in range(500):
        cycle.run_once()
        clock.advance(2.0)
    adapter.close()
    engine.dispose()
    return asked


def test_replay_the_last_hours_and_dry_run(tmp_path: Path, sqlite_template: Path) -> None:
    database = tmp_path / "history.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{database}"
    asked = recorded_history(url)
    env = {
        "CAROUSEL_DATABASE_URL": url,
        "CAROUSEL_ADAPTER_OPTIONS": json.dumps(LIBRARY),
        "CAROUSEL_POLICY": "fifo",
    }

    code, out, err = cli(env, "policy", "replay", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert body["requests"] == 3 and body["recorded"]["files"] == body["recorded"]["staged"] == asked
    assert body["under_active"]["staged"] == asked and body["under_active"]["mounts"] > 0

    code, out, err = cli(env, "policy", "replay", "cta", "--options", '{"min_age_s": 60}', "--hours", "2")
    assert code == 0, err
    assert "3 requests from" in out and "2 lto8 drives" in out
    lines = {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines() if "replay (" in line}
    assert set(lines) == {"replay (active)", "replay (candidate)"}
    assert " cta " in lines["replay (candidate)"] and " fifo " in lines["replay (active)"]

    code, out, err = cli(env, "policy", "replay", "--hours", "0")
    assert code == 2 and "hours" in err and len(err.strip().splitlines()) == 1

    code, out, err = cli(env, "policy", "dry-run", "carousel")
    assert code == 0, err
    assert "0 tapes with work" in out and "candidate: carousel" in out and "active: fifo" in out


def test_text_that_cannot_be_stored_is_a_one_line_refusal(tmp_path: Path, sqlite_template: Path) -> None:
    database = tmp_path / "policy.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_POLICY": "fifo"}
    weights = '{"fair_share": {"weights": {"atlas\\u0000": 1}}}'  # NUL, as JSON's escape
    refusals = [
        (("--options", weights, "--reason", "x"), "options.fair_share.weights a key contains a NUL"),
        (("--reason", "not UTF-8: \udcff"), "reason is not valid Unicode text"),  # argv bytes, escaped
    ]
    for args, says in refusals:
        code, _, err = cli(env, "policy", "set", "carousel", *args)
        assert code == 2, err
        assert err.startswith("carousel: ") and says in err and len(err.strip().splitlines()) == 1
    code, out, _ = cli(env, "policy", "show")
    assert json.loads(out)["version"] == 0
