"""`GET /metrics`: the app's own registry in Prometheus' text format (prometheus-client's parser reads it)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from carousel.observability.metrics import ServiceMetrics

router = APIRouter(tags=["operations"])


def service_metrics(request: Request) -> ServiceMetrics:
    """The metrics of the app answering this request (set up by `install_operations`)."""
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
def metrics(request: Request) -> Response:
    """Counters of this process (of every worker under `carousel api --workers N`) and queue figures read
    from the database now; names in docs/operations.md."""
    return Response(generate_latest(service_metrics(request).exposition()), media_type=CONTENT_TYPE_LATEST)
