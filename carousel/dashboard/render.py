"""The dashboard's HTML, from Jinja2 templates shipped in the package (carousel/dashboard/templates)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from carousel.dashboard.view import Dashboard
from carousel.domain.sizes import decimal_size
from carousel.reports.table import iso


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = max(float(seconds), 0.0)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s // 60:.0f} min {s % 60:02.0f} s"
    if s < 86_400:
        return f"{s // 3600:.0f} h {s % 3600 // 60:02.0f} min"
    return f"{s // 86_400:.0f} d {s % 86_400 // 3600:.0f} h"


def when(moment: datetime) -> str:
    """A time as people read it on the page: UTC to the second (the full ISO form is in the markup)."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def percent(ratio: float | None) -> str:
    return "–" if ratio is None else f"{100 * ratio:.1f} %"


def age(since: datetime | None, now: datetime) -> str:
    return "–" if since is None else human_duration((now - since).total_seconds())


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("carousel.dashboard", "templates"),
        autoescape=select_autoescape(("html",)),
        undefined=StrictUndefined,  # a misspelt name in a template fails the page, never shows empty
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(bytes=decimal_size, duration=human_duration, percent=percent, iso=iso, when=when)
    env.globals.update(age=age)
    return env


def report_url(kind: str, dashboard: Dashboard, output: str) -> str:
    window = dashboard.throughput.window
    query = {"since": iso(window.since), "until": iso(window.until), "bucket": "hour", "format": output}
    return f"api/reports/{kind}?{urlencode(query)}"  # relative: the page may sit behind a path prefix


def render_dashboard(dashboard: Dashboard, *, refresh_s: int) -> str:
    return (
        environment()
        .get_template("dashboard.html")
        .render(
            d=dashboard,
            refresh_s=refresh_s,
            report_url=lambda kind, output: report_url(kind, dashboard, output),
        )
    )
