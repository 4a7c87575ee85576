"""Reports over HTTP: `GET /api/reports` lists them, `GET /api/reports/{kind}` gives one as JSON, CSV or PNG.

The window is `since` and `until` (ISO 8601 with a zone; default: the day before now) cut in `bucket`s of an
hour or a day. The database is read in one session, closed before the figure is drawn.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from carousel.api.context import Context
from carousel.config.libraries import chosen_library
from carousel.domain.planning import LibraryCosts
from carousel.reports.catalog import KINDS, build_report, kind_named
from carousel.reports.table import Report, to_csv, to_document
from carousel.reports.window import Bucket, make_window
from carousel.scheduler.planning_path import published_costs
from hsm_adapters.site import Site

router = APIRouter(prefix="/api/reports", tags=["reports"])


class Format(StrEnum):
    JSON = "json"
    CSV = "csv"
    PNG = "png"


@router.get("")
def list_reports() -> dict[str, Any]:
    """The reports there are, each with its default bucket."""
    return {
        "reports": [
            {"kind": k.name, "description": k.description, "default_bucket": k.default_bucket.value}
            for k in KINDS.values()
        ]
    }


def render(report: Report, output: Format) -> Response:
    stem = f"carousel-{report.kind}-{report.window.since:%Y%m%dT%H%M%SZ}"
    if output is Format.CSV:
        return Response(
            to_csv(report),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'inline; filename="{stem}.csv"'},
        )
    if output is Format.PNG:
        # matplotlib is slow to import: only figures pay for it
        from carousel.reports.figures import png  # noqa: PLC0415

        return Response(png(report), media_type="image/png")
    return JSONResponse(to_document(report))


@router.get(
    "/{kind}",
    responses={
        200: {"content": {"text/csv": {}, "image/png": {}}, "description": "the report"},
        400: {"description": "a bad window or bucket, naming the parameter"},
        404: {"description": "no such report"},
    },
)
def report(
    kind: str,
    *,
    context: Context,
    since: Annotated[
        datetime | None, Query(description="start, ISO 8601 with a zone (default: until - 1 day)")
    ] = None,
    until: Annotated[
        datetime | None, Query(description="end, excluded, ISO 8601 with a zone (default: now)")
    ] = None,
    bucket: Annotated[Bucket | None, Query(description="hour or day (default: the report's own)")] = None,
    output: Annotated[Format, Query(alias="format", description="json, csv or png")] = Format.JSON,
    library: Annotated[
        str | None,
        Query(max_length=64, description="one library's history (default: the whole site's)"),
    ] = None,
) -> Response:
    """One report over a window; the columns, with their units and meaning, are in the JSON document."""
    chosen = kind_named(kind)
    now = context.clock.now()
    window = make_window(since, until, bucket or chosen.default_bucket, now)
    window = replace(window, library=chosen_library(context.settings, library))
    with context.session_factory() as session:  # read only: nothing to commit
        built = build_report(chosen.name, session, window, now, _costs(context, window.library))
    return render(built, output)


def _costs(context: Context, library: str | None) -> LibraryCosts | None:
    """The published costs of the library reported on: the one library's, or a named library's of a site;
    none for a site as a whole (its libraries' differ)."""
    site = context.adapter
    if isinstance(site, Site) and library is not None:
        return published_costs(site.libraries[library])
    return published_costs(site)
