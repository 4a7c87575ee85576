"""`make run` installs what running the service needs and no development tool, and serves on the port asked
for (read from make's dry run: what the targets would do, without doing it)."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
DEVELOPMENT_TOOLS = ("pytest", "hypothesis", "mypy", "ruff", "import-linter", "schemathesis")


def dry_run(*args: str) -> list[str]:
    """The commands `make -n -B ARGS` prints (as on a fresh clone: -B takes every target as out of date)."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", *args],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def installs(commands: list[str]) -> list[str]:
    return [line for line in commands if re.search(r"\bpip install\b", line) and "--upgrade pip" not in line]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_the_runtime_dependencies_hold_no_development_tool() -> None:
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert requirement_names(project["dependencies"]).isdisjoint(DEVELOPMENT_TOOLS)
    assert set(DEVELOPMENT_TOOLS) <= requirement_names(project["optional-dependencies"]["dev"])


def test_make_run_installs_the_runtime_only_and_serves_on_the_port_asked_for() -> None:
    commands = dry_run("run", "PORT=8123")
    assert [line.split()[-1] for line in installs(commands)] == ["."], installs(commands)
    assert commands[-2:] == [
        ".venv/bin/carousel db upgrade",
        ".venv/bin/carousel serve --host 127.0.0.1 --port 8123",
    ]


def test_make_run_without_a_port_leaves_it_to_the_settings() -> None:
    # no --port: CAROUSEL_PORT (or the TOML file, or the default 8000) decides
    assert dry_run("run")[-1] == ".venv/bin/carousel serve --host 127.0.0.1"


def test_make_test_installs_the_development_tools_too() -> None:
    assert [line.split()[-1] for line in installs(dry_run(".venv/.installed"))] == ["'.[dev]'"]


def test_make_check_types_every_package_but_the_tests() -> None:
    # `make check` runs mypy on the packages pyproject.toml lists: a package left out (as bench once was)
    # drifts out of strict typing unseen; the tests are not held to it
    listed = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"][
        "packages"
    ]
    packages = {init.parent.name for init in CHECKOUT.glob("*/__init__.py")} - {"tests"}
    assert packages <= set(listed), sorted(packages - set(listed))
    assert ".venv/bin/mypy" in dry_run("check")
