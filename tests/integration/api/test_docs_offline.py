"""The interactive API documentation works without internet access: Swagger UI (/docs) and ReDoc (/redoc)
load their scripts and styles from the service itself, and render the OpenAPI document in headless Chromium
that can reach nothing but loopback."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from sqlalchemy.orm import sessionmaker

from carousel.api.app import create_app
from carousel.config import Settings
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.browser import rendered_document
from tests.integration.live_server import serving


class Assets(HTMLParser):
    """The addresses a page loads: scripts, stylesheets, icons, images."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        address = (
            found.get("src") if tag in ("script", "img") else found.get("href") if tag == "link" else None
        )
        if address:
            self.urls.append(address)


@pytest.fixture
def served(library: SimulatedAdapter, clock: ManualClock) -> Iterator[str]:
    # the documentation reads no database: an unbound session factory shows that it never tries
    app = create_app(Settings(), adapter=library, clock=clock, session_factory=sessionmaker())
    with serving(app) as url:
        yield url


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_documentation_loads_only_from_the_service(served: str, page: str) -> None:
    response = httpx.get(served + page, timeout=30)
    assert response.status_code == 200
    assets = Assets(response.text).urls
    assert any(url.endswith(".js") for url in assets), assets
    for url in assets:
        absolute = urljoin(served + page, url)
        assert urlsplit(absolute).netloc == urlsplit(served).netloc, f"{page} loads {url} from elsewhere"
        assert httpx.get(absolute, timeout=30).status_code == 200, url


def test_swagger_ui_renders_every_path_offline(served: str, tmp_path: Path) -> None:
    document = rendered_document(f"{served}/docs", tmp_path / "profile")
    paths = httpx.get(f"{served}/openapi.json", timeout=30).json()["paths"]
    for path in paths:
        assert f'class="opblock-summary-path" data-path="{path}"' in document, f"{path} not rendered"


def test_redoc_renders_the_operations_offline(served: str, tmp_path: Path) -> None:
    document = rendered_document(f"{served}/redoc", tmp_path / "profile")
    schema = httpx.get(f"{served}/openapi.json", timeout=30).json()
    operations = [op["operationId"] for item in schema["paths"].values() for op in item.values()]
    assert operations
    for operation in operations:
        assert f"operation/{operation}" in document, f"{operation} not rendered"
