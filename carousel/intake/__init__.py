"""Use cases behind every API: submit, cancel, release, status, archive info."""
