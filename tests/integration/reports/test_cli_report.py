"""`carousel report` reads the configured database itself: the API's table, and one-line errors."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from carousel.cli.app import app
from carousel.reports.table import iso
from tests.integration.reports.conftest import Recorded, app_for, client
from tests.integration.reports.history import LIBRARY

runner = CliRunner()


def environment(recorded: Recorded) -> dict[str, str]:
    """The CLI configured like the service that recorded the history: its database and its library (whose
    published costs, in that service's clock seconds, give the transfer estimates)."""
    return {
        "CAROUSEL_DATABASE_URL": recorded.url.render_as_string(hide_password=False),
        "CAROUSEL_ADAPTER_OPTIONS": json.dumps(LIBRARY),
    }


@pytest.mark.parametrize("recorded", ["sqlite"], indirect=True)  # the queries are tested on both elsewhere
def test_the_cli_writes_the_table_the_api_serves(recorded: Recorded, tmp_path: Path) -> None:
    since = iso(recorded.history.started + timedelta(minutes=5))
    until = iso(recorded.history.ended - timedelta(minutes=1))
    for kind in ("drives", "queue-age"):
        result = runner.invoke(
            app,
            ["report", kind, "--since", since, "--until", until, "--format", "csv"],
            env=environment(recorded),
        )
        assert result.exit_code == 0, result.output
        with client(app_for(recorded, shared_metrics=False)) as api:
            served = api.get(f"/api/reports/{kind}", params={"since": since, "until": until, "format": "csv"})
        assert served.headers["content-type"].startswith("text/csv")
        assert result.stdout == served.text
        assert len(result.stdout.splitlines()) > 2

    figure = tmp_path / "library.png"
    args = ["report", "library", "--since", since, "--until", until, "--format", "png", "--out", str(figure)]
    result = runner.invoke(app, args, env=environment(recorded))
    assert result.exit_code == 0, result.output
    assert imread(figure, format="png").shape[:2] == (460, 1000)


@pytest.mark.parametrize("recorded", ["sqlite"], indirect=True)
def test_the_cli_names_what_is_wrong_in_one_line(recorded: Recorded) -> None:
    cases = [
        (["report", "weekly"], "no report 'weekly'"),
        (["report", "library", "--format", "png"], "--format png needs --out FILE"),
        (["report", "library", "--since", "yesterday"], "--since 'yesterday'"),
        (["report", "library", "--since", "2026-01-01T00:00:00"], "since needs a time zone"),
    ]
    for args, says in cases:
        result = runner.invoke(app, args, env=environment(recorded))
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
