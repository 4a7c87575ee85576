"""Trace replay: the service's planning code over a memory queue against the simulated library."""
