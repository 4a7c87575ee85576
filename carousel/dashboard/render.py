"""The dashboard's HTML, from Jinja2 templates shipped in the package (carousel/dashboard/templates)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from carousel.dashboard.view import Dashboard, Throughput
from carousel.domain.sizes import decimal_size
from carousel.reports.table import iso


def human_duration(seconds: float | None) -> str:
    """Every duration on the page, one rule: rounded first, then written in one unit or two. Under 10 s to a
    tenth ("0.4 s": a simulated library on a fast clock reads in fractions of a second, and "0 s" beside an
    efficiency of 13.8 % would read as nothing; "< 0.1 s" when less, but not nothing), then whole seconds,
    minutes and seconds, hours and minutes, days and hours. Rounding comes before the units are chosen, so
    59.7 s reads "1 min 00 s", never "60 s"."""
    if seconds is None:
        return "–"
    s = max(float(seconds), 0.0)
    if s == 0:
        return "0 s"
    tenths = round(s * 10)
    if tenths == 0:
        return "< 0.1 s"
    if tenths < 100:
        return f"{tenths / 10:.1f} s"
    whole = round(s)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    minutes = round(s / 60)
    if minutes < 24 * 60:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    hours = round(s / 3600)
    return f"{hours // 24} d {hours % 24} h"


def when(moment: datetime) -> str:
    """A time as people read it on the page: UTC to the second (the full ISO form is in the markup)."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def percent(ratio: float | None) -> str:
    return "–" if ratio is None else f"{100 * ratio:.1f} %"


def age(since: datetime | None, now: datetime) -> str:
    return "–" if since is None else human_duration((now - since).total_seconds())


def average_span(throughput: Throughput) -> str:
    """The time an average rate is taken over: the last 24 h, or the history's span when it is younger."""
    if throughput.whole_window:  # the window is whole hours: "24 h", as the cards' labels say
        return f"{throughput.covered_s / 3600:g} h"
    return human_duration(throughput.covered_s)


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
    env.globals.update(age=age, average_span=average_span)
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
