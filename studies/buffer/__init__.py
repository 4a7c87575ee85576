"""Disk buffer size by simulation: throughput and files per mount against the buffer, Little's law checked."""
