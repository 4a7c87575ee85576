"""What operators use, installed on an app in one call: reports, the dashboard, /metrics, and request ids
with HTTP metrics on every request."""

from __future__ import annotations

from fastapi import Depends, FastAPI

from carousel.api import dashboard, metrics, reports
from carousel.api.context import AppContext
from carousel.api.operator_access import operators_only
from carousel.api.request_context import RequestContext
from carousel.observability.metrics import ServiceMetrics


def install_operations(app: FastAPI, service_metrics: ServiceMetrics | None = None) -> ServiceMetrics:
    """Adds the operators' routes and the request middleware to an app whose context is set. Give the
    process's metrics to share them with its scheduler; by default the app gets a registry of its own."""
    context: AppContext = app.state.context
    chosen = service_metrics or ServiceMetrics()
    chosen.watch_database(context.session_factory, context.clock)
    app.state.metrics = chosen
    # reports and the dashboard need the admin role once anonymous access is off; /metrics stays open
    app.include_router(reports.router, dependencies=[Depends(operators_only)])
    app.include_router(dashboard.router, dependencies=[Depends(operators_only)])
    app.include_router(metrics.router)
    app.add_middleware(RequestContext, metrics=chosen)
    return chosen
