"""Applies adapter events to files, requests and the mount history; idempotent."""
