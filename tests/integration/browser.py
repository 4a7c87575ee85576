"""Headless Chromium, for the pages people read in a browser (the dashboard, /docs): a screenshot, or the
document as the page's own scripts left it. Every host but loopback is unreachable to it, as on a site
without internet access, so a page that needs anything from outside shows it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

# Everything but the page itself off: no updates, sync or other background traffic in a test.
QUIET = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--hide-scrollbars",
)
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
# Virtual time does not advance while fetches are pending: scripts that load data after the page's load
# event (Swagger UI fetches the OpenAPI document) have run when this much virtual time has passed.
SETTLE_MS = 10_000


def chromium(url: str, profile: Path, size: tuple[int, int], *flags: str) -> str:
    """Runs chromium on url in a window of size (width, height); returns what it printed."""
    program = shutil.which("chromium")
    assert program, "chromium is not installed: run scripts/system-deps.sh"
    command = [program, *QUIET, OFFLINE, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
    done = subprocess.run([*command, *flags, url], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(url: str, out: Path, profile: Path, size: tuple[int, int]) -> None:
    chromium(url, profile, size, f"--screenshot={out}")


def rendered_document(url: str, profile: Path, size: tuple[int, int] = (1280, 1000)) -> str:
    """The page's HTML once its scripts ran and its fetches were answered."""
    return chromium(url, profile, size, f"--virtual-time-budget={SETTLE_MS}", "--dump-dom")
