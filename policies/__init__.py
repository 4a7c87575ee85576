"""Scheduling policies: pure functions of a queue snapshot."""
