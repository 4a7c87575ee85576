"""Scheduling policies by simulation: queue depth, drives and grouping by tape (seed 003)."""
