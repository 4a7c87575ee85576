"""The seed documents, read from `../shared/seeds` beside the repository; a missing seed fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SEEDS_DIR = REPO_ROOT.parent / "shared" / "seeds"


def seed_text(name: str) -> str:
    path = SEEDS_DIR / name
    if not path.is_file():
        pytest.fail(f"seed document {path} is missing: the transcription cannot be checked without it")
    return path.read_text(encoding="utf-8")
