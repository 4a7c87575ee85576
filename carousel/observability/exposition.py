"""/metrics for a process that serves no HTTP API of its own (`carousel scheduler`): prometheus-client's
small HTTP server on the given address, in a daemon thread, over the process's registry."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import start_http_server

from carousel.observability.metrics import ServiceMetrics


def serve_metrics(metrics: ServiceMetrics, host: str, port: int) -> tuple[int, Callable[[], None]]:
    """Start serving; returns the port bound (port 0 picks one) and a function that stops the server."""
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join()

    return int(server.server_address[1]), stop
