"""`carousel report KIND`: a report read straight from the configured database (no running service needed),
written as JSON, CSV or PNG to a file or standard output."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from carousel.config import Settings, load_settings
from carousel.config.libraries import chosen_library, libraries_of, library_adapter, sole_adapter
from carousel.domain.clock import Clock, SystemClock
from carousel.domain.errors import InvalidInput
from carousel.domain.planning import LibraryCosts
from carousel.reports.table import to_csv, to_document
from carousel.reports.window import Bucket, make_window

# The reports' queries, the database and the adapters are imported inside the command, when it runs:
# `carousel` loads this module for every command. The kinds are named here for the help (a test checks them
# against carousel.reports.catalog.KINDS).
KIND_NAMES = ("library", "drives", "tapes", "groups", "mounts", "remounts", "queue-age")

_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


class Output(StrEnum):
    JSON = "json"
    CSV = "csv"
    PNG = "png"


def parse_time(text: str, name: str, before: datetime) -> datetime:
    """ISO 8601 with a zone (2026-01-01T00:00:00Z), or a span back from `before` (90m, 6h, 7d)."""
    ago = _AGO.match(text)
    if ago:
        return before - timedelta(seconds=float(ago.group(1)) * _UNIT_S[ago.group(2)])
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"--{name} {text!r}: give an ISO 8601 time with a zone (2026-01-01T00:00:00Z) or a span (6h, 7d)",
            field=name,
        ) from None


def library_costs(settings: Settings, clock: Clock, library: str | None = None) -> LibraryCosts | None:
    """The published costs (for the transfer estimates) of the library reported on: the one configured, or
    the one named; None for a site of several as a whole (its libraries' differ)."""
    from carousel.scheduler.planning_path import published_costs  # noqa: PLC0415

    if library is None and len(libraries_of(settings)) > 1:
        return None
    adapter = sole_adapter(settings, clock) if library is None else library_adapter(settings, library, clock)
    try:
        return published_costs(adapter)
    finally:
        adapter.close()


def report(
    kind: Annotated[str, typer.Argument(help=f"one of: {', '.join(KIND_NAMES)}")],
    *,
    since: Annotated[
        str | None,
        typer.Option(help="start: ISO 8601 with a zone, or a span before --until (6h, 7d); default 1d"),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="end, excluded: ISO 8601 with a zone, or a span before now")
    ] = None,
    bucket: Annotated[Bucket | None, typer.Option(help="hour or day (default: the report's own)")] = None,
    output: Annotated[Output, typer.Option("--format", help="json, csv or png")] = Output.JSON,
    out: Annotated[
        Path | None, typer.Option("--out", help="write to this file (default: standard output)")
    ] = None,
    library: Annotated[
        str | None, typer.Option(help="one library's history (default: the whole site's)")
    ] = None,
) -> None:
    """A throughput, mount or queue report from the recorded history (columns: docs/operations.md)."""
    from carousel.db.engine import make_session_factory, open_database  # noqa: PLC0415
    from carousel.reports.catalog import build_report, kind_named  # noqa: PLC0415

    chosen = kind_named(kind)
    if output is Output.PNG and out is None:
        raise InvalidInput("--format png needs --out FILE", field="out")
    clock = SystemClock()
    now = clock.now()
    end = parse_time(until, "until", now) if until is not None else None
    start = parse_time(since, "since", end or now) if since is not None else None
    window = make_window(start, end, bucket or chosen.default_bucket, now)
    settings = load_settings()
    window = replace(window, library=chosen_library(settings, library, field="--library"))
    costs = library_costs(settings, clock, window.library)
    engine = open_database(settings)
    try:
        with make_session_factory(engine)() as session:
            built = build_report(chosen.name, session, window, now, costs)
    finally:
        engine.dispose()
    if output is Output.PNG:
        # matplotlib is slow to import: only figures pay for it
        from carousel.reports.figures import png  # noqa: PLC0415

        data: bytes = png(built)
    elif output is Output.CSV:
        data = to_csv(built).encode()
    else:
        data = (json.dumps(to_document(built), indent=2) + "\n").encode()
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise InvalidInput(f"--out {out}: {exc.strerror or exc}", field="out") from exc
    typer.echo(f"{chosen.name} report, {len(built.rows)} rows: {out}", err=True)
