"""HTTP API: app factory, routers, problem+json errors."""
