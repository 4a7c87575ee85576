"""`carousel policy show|set|audit` on a real SQLite database: a change validated and audited as through the
API, a refused one a one-line error (exit 2) that changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from carousel.cli import app

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
