"""The layers contract in pyproject.toml (lint-imports checks the imports against it) names every package of
carousel and every root package, each once: a package added later is put on the map, or this fails."""

from __future__ import annotations

import pkgutil
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import carousel

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def import_linter() -> dict[str, Any]:
    settings: dict[str, Any] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return settings


def names_in_layers() -> list[str]:
    (contract,) = [c for c in import_linter()["contracts"] if c["type"] == "layers"]
    return [name.strip() for layer in contract["layers"] for name in re.split(r"[|:]", layer)]


def test_the_layers_name_every_package_once() -> None:
    ours = {f"carousel.{found.name}" for found in pkgutil.iter_modules(carousel.__path__)}
    roots = set(import_linter()["root_packages"]) - {"carousel"}
    named = names_in_layers()
    assert [name for name, times in Counter(named).items() if times > 1] == []
    assert set(named) == ours | roots
