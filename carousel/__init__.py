"""carousel: a tape staging service."""
