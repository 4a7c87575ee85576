"""Tape efficiency against file size and files per mount (seed 003), by formula and simulation."""
