"""Debian's gfal2 with a bearer token against `carousel serve` with anonymous calls off: the token comes
from BEARER_TOKEN, as grid jobs hand it over. A static token and a JWT signed by a key made here both
stage; without a token, or with one whose scope does not cover the path, nothing is staged."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from carousel.domain.clock import ManualClock, SystemClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.clients.support import (
    ServiceNotReady,
    free_port,
    service_environment,
    start_carousel,
    stop,
    wait_ready,
    write_carousel_config,
)
from tests.clients.test_gfal2 import CLIENT_TIMEOUT_S, LIBRARY, SYSTEM_PYTHON, last_status
from tests.tokens import AUDIENCE, Issuer, static_token

pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("gfal2")]


@dataclass
class Secured:
    url: str
    paths: list[str]
    env: dict[str, str]
    static_token: str
    issuer: Issuer

    def surl(self) -> str:
        path, self.paths = self.paths[0], self.paths[1:]
        return self.url + path

    def bringonline(self, surl: str, token: str | None) -> tuple[int, str]:
        env = {k: v for k, v in self.env.items() if k != "BEARER_TOKEN"}
        if token is not None:
            env["BEARER_TOKEN"] = token
        result = subprocess.run(
            ["gfal-bringonline", surl, "--polling-timeout", "60"],
            env=env,
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
            check=False,
        )
        return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("gfal2-token")
    port = free_port()
    token, entry = static_token("gfal-user")
    issuer = Issuer(kind="rsa")
    key_file = issuer.write_pem(tmp)
    config = write_carousel_config(tmp, port=port, library=LIBRARY)
    config.write_text(
        "anonymous = false\n"
        + config.read_text()
        + f"""
[[auth.static_tokens]]
name = "{entry.name}"
sha256 = "{entry.sha256}"
scopes = ["storage.stage:/star"]

[[auth.issuers]]
name = "star"
issuer = "{issuer.url}"
audiences = ["{AUDIENCE}"]
public_key_file = "{key_file}"
algorithms = ["RS256"]
"""
    )
    env = service_environment(config)
    env["GFAL_PYTHONBIN"] = SYSTEM_PYTHON
    process, log = start_carousel(tmp, env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(url, process, log)
        except ServiceNotReady as exc:
            pytest.fail(str(exc))
        assert "anonymous access is on" not in log.read_text()
        catalogue = build_simulated_adapter(LIBRARY, ManualClock()).library.catalogue
        yield Secured(url, list(catalogue), env, token, issuer)
    finally:
        stop(process)


def test_gfal_bringonline_with_a_static_token(secured: Secured) -> None:
    surl = secured.surl()
    code, output = secured.bringonline(surl, secured.static_token)
    assert code == 0, output
    assert last_status(output) == {surl: "READY"}


def test_gfal_bringonline_with_a_jwt(secured: Secured) -> None:
    surl = secured.surl()
    token = secured.issuer.mint(
        SystemClock().now(), sub="job-42", scope="storage.stage:/star", lifetime_s=600
    )
    code, output = secured.bringonline(surl, token)
    assert code == 0, output
    assert last_status(output) == {surl: "READY"}


@pytest.mark.parametrize("scope", [None, "storage.stage:/elsewhere"], ids=["no-token", "outside-scope"])
def test_gfal_stages_nothing_without_a_token_or_outside_its_scope(
    secured: Secured, scope: str | None
) -> None:
    surl = secured.surl()
    token = None if scope is None else secured.issuer.mint(SystemClock().now(), scope=scope, lifetime_s=600)
    code, output = secured.bringonline(surl, token)
    assert "READY" not in output and "QUEUED" not in output, output
    assert code != 0 or "FAILED" in output, output
    expected = "401" if scope is None else "403"
    assert expected in output, output


def test_gfal_archivepoll_with_a_poll_only_token(secured: Secured) -> None:
    # CTA's checks poll with a token that carries nothing but storage.poll:/ (issue 17).
    surl = secured.surl()
    token = secured.issuer.mint(SystemClock().now(), sub="poller", scope="storage.poll:/", lifetime_s=600)
    env = {**secured.env, "BEARER_TOKEN": token}
    result = subprocess.run(
        ["gfal-archivepoll", surl, "--polling-timeout", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert last_status(output) == {surl: "READY"}, output
    _, staged = secured.bringonline(secured.surl(), token)  # polling is not staging
    assert "403" in staged and "READY" not in staged, staged
