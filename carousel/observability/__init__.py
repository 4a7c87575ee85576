"""Metrics and the wiring that feeds them: what the service tells its operators while it runs."""
