"""Throughput and efficiency reports from the mount and file history."""
