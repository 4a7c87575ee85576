"""JWT verification against real keys made here: what a forged, expired, misdirected or malformed token
gets, and keys fetched from a JWKS document served on loopback."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest

from carousel.auth.authenticator import Authenticator
from carousel.auth.errors import InvalidToken
from carousel.auth.jwt_tokens import JwtVerifier
from carousel.config.auth import ANY_AUDIENCE, AuthSettings, IssuerSettings
from carousel.domain.clock import ManualClock
from carousel.domain.errors import ConfigError, Unavailable
from tests.tokens import AUDIENCE, Issuer

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def now() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def verifier(issuer: Issuer, tmp_path: Path, now: ManualClock) -> JwtVerifier:
    return JwtVerifier((issuer.settings(issuer.write_pem(tmp_path)),), now)


def test_a_good_token_verifies(issuer: Issuer, verifier: JwtVerifier) -> None:
    verified = verifier.verify(issuer.mint(NOW, sub="alice", groups=["/star"]))
    assert verified.subject == "alice"
    assert verified.claims["wlcg.groups"] == ["/star"]


def test_a_forged_signature_is_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    forger = Issuer()  # same issuer name and kid, another key
    with pytest.raises(InvalidToken, match="signature"):
        verifier.verify(forger.mint(NOW))


def test_a_tampered_payload_is_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    header, payload, signature = issuer.mint(NOW, scope="storage.read:/").split(".")
    claims = json.loads(jwt.utils.base64url_decode(payload))
    claims["scope"] = "storage.stage:/"
    forged = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
    with pytest.raises(InvalidToken, match="signature"):
        verifier.verify(f"{header}.{forged}.{signature}")


def test_an_expired_token_is_refused_on_the_injected_clock(
    issuer: Issuer, verifier: JwtVerifier, now: ManualClock
) -> None:
    token = issuer.mint(NOW, lifetime_s=600)
    verifier.verify(token)
    now.advance(599)
    verifier.verify(token)
    now.advance(1)
    with pytest.raises(InvalidToken, match="expired"):
        verifier.verify(token)


def test_a_token_from_the_future_is_refused_beyond_the_leeway(issuer: Issuer, verifier: JwtVerifier) -> None:
    verifier.verify(issuer.mint(NOW.replace(second=50)))  # 50 s ahead: within the 60 s leeway
    with pytest.raises(InvalidToken, match="not valid yet"):
        verifier.verify(issuer.mint(NOW.replace(minute=5)))


@pytest.mark.parametrize("audience", ["https://other.test", ["https://other.test", "https://third.test"]])
def test_a_token_for_another_audience_is_refused(
    issuer: Issuer, verifier: JwtVerifier, audience: Any
) -> None:
    with pytest.raises(InvalidToken, match="not meant for this service"):
        verifier.verify(issuer.mint(NOW, audience=audience))


def test_the_any_audience_is_accepted_unless_turned_off(
    issuer: Issuer, tmp_path: Path, now: ManualClock
) -> None:
    token = issuer.mint(NOW, audience=[ANY_AUDIENCE])
    JwtVerifier((issuer.settings(issuer.write_pem(tmp_path)),), now).verify(token)
    strict = JwtVerifier((issuer.settings(issuer.write_pem(tmp_path), accept_any_audience=False),), now)
    with pytest.raises(InvalidToken):
        strict.verify(token)


def test_missing_audience_or_subject_is_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    with pytest.raises(InvalidToken, match="aud"):
        verifier.verify(issuer.mint(NOW, audience=None))
    with pytest.raises(InvalidToken, match="sub"):
        verifier.verify(issuer.mint(NOW, sub=None))


def test_an_untrusted_issuer_is_refused_even_with_a_good_signature(
    issuer: Issuer, verifier: JwtVerifier
) -> None:
    with pytest.raises(InvalidToken, match="not trusted"):
        verifier.verify(issuer.mint(NOW, issuer="https://evil.test"))


def test_unsigned_and_symmetric_tokens_are_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    claims = {"iss": issuer.url, "sub": "mallory", "aud": AUDIENCE, "exp": NOW.timestamp() + 600}
    unsigned = jwt.encode(claims, None, algorithm="none")
    with pytest.raises(InvalidToken, match="algorithm"):
        verifier.verify(unsigned)

    # The classic confusion: HMAC keyed with the issuer's public key, which everybody has. PyJWT refuses
    # to make such a token, so it is made by hand.
    def b64(data: bytes) -> str:
        return jwt.utils.base64url_encode(data).decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    signing_input = f"{header}.{b64(json.dumps(claims).encode())}"
    mac = hmac.new(issuer.public_pem().encode(), signing_input.encode(), hashlib.sha256).digest()
    with pytest.raises(InvalidToken, match="algorithm"):
        verifier.verify(f"{signing_input}.{b64(mac)}")


@pytest.mark.parametrize("garbage", ["a.b.c", "not-a-jwt", "e30.e30.", "." * 2])
def test_garbage_is_refused(verifier: JwtVerifier, garbage: str) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(garbage)


def test_a_token_of_another_profile_version_is_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    with pytest.raises(InvalidToken, match=r"wlcg\.ver"):
        verifier.verify(issuer.mint(NOW, **{"wlcg.ver": "2.0"}))


def test_a_bad_key_file_stops_the_start(tmp_path: Path, issuer: Issuer, now: ManualClock) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(ConfigError, match=r"bad\.pem"):
        JwtVerifier((issuer.settings(bad),), now)
    with pytest.raises(ConfigError, match="cannot read"):
        JwtVerifier((issuer.settings(tmp_path / "missing.pem"),), now)


def test_a_jwks_file_chooses_the_key_by_kid(tmp_path: Path, now: ManualClock) -> None:
    first, second = Issuer(kid="k1"), Issuer(kid="k2")
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps({"keys": first.jwks()["keys"] + second.jwks()["keys"]}))
    verifier = JwtVerifier((first.settings(keys),), now)
    verifier.verify(first.mint(NOW))
    verifier.verify(second.mint(NOW, issuer=first.url))
    with pytest.raises(InvalidToken, match="no key"):
        verifier.verify(first.mint(NOW, kid="k3"))


class _Jwks:
    """A JWKS document served on 127.0.0.1, counting fetches; its keys can be replaced (rotation)."""

    def __init__(self) -> None:
        self.document: dict[str, Any] = {"keys": []}
        self.fetches = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/oauth2/certs"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def jwks() -> Iterator[_Jwks]:
    served = _Jwks()
    yield served
    served.close()


def test_keys_from_a_jwks_url_are_cached_and_fetched_again_for_a_new_kid(
    jwks: _Jwks, now: ManualClock
) -> None:
    old, new = Issuer(kid="2026-01", kind="rsa"), Issuer(kid="2026-02", kind="rsa")
    jwks.document = old.jwks()
    verifier = JwtVerifier((old.settings(jwks_url=jwks.url, jwks_refetch_cooldown_s=0),), now)
    for _ in range(3):
        verifier.verify(old.mint(NOW))
    assert jwks.fetches == 1
    jwks.document = {"keys": old.jwks()["keys"] + new.jwks()["keys"]}  # the issuer rotates its key
    verifier.verify(new.mint(NOW, issuer=old.url))
    assert jwks.fetches == 2
    with pytest.raises(InvalidToken, match="signature"):
        verifier.verify(
            Issuer(kid="2026-02", kind="rsa").mint(NOW, issuer=old.url)
        )  # forged under a known kid


def test_unknown_kids_fetch_again_at_most_once_per_cooldown(jwks: _Jwks, now: ManualClock) -> None:
    issuer = Issuer(kid="k1")
    jwks.document = issuer.jwks()
    verifier = JwtVerifier((issuer.settings(jwks_url=jwks.url),), now)  # 30 s cooldown
    verifier.verify(issuer.mint(NOW))
    for attempt in range(5):
        with pytest.raises(InvalidToken, match="no key"):
            verifier.verify(issuer.mint(NOW, kid=f"made-up-{attempt}"))
    assert jwks.fetches <= 2


def test_an_unreachable_jwks_url_is_unavailable_not_the_clients_fault(now: ManualClock) -> None:
    with socket.socket() as sock:  # a port nobody listens on once this closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    issuer = Issuer()
    verifier = JwtVerifier((issuer.settings(jwks_url=f"http://127.0.0.1:{port}/certs"),), now)
    with pytest.raises(Unavailable, match="cannot be fetched"):
        verifier.verify(issuer.mint(NOW))


def test_the_authenticator_names_callers_by_issuer_and_subject(issuer: Issuer, tmp_path: Path) -> None:
    settings = AuthSettings(
        issuers=(issuer.settings(issuer.write_pem(tmp_path), admin_groups=("/star/admins",)),)
    )
    authenticator = Authenticator(settings, anonymous=False, clock=ManualClock(NOW))
    token = issuer.mint(
        NOW, sub="0f3c", groups=["/star", "/star/admins"], scope="storage.stage:/star carousel.group"
    )
    caller = authenticator.authenticate(authorization=f"Bearer {token}", peer="127.0.0.1", headers={})
    assert caller.name == "star:0f3c"
    assert caller.groups == ("/star", "/star/admins")
    assert caller.grants.admin
    assert caller.grants.shared_groups == {"/star", "/star/admins"}
    assert caller.grants.may_stage("/star/a") and not caller.grants.may_stage("/atlas/a")


def test_issuer_settings_refuse_symmetric_algorithms_and_two_key_sources(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="algorithms"):
        IssuerSettings(
            name="x", issuer="https://x", audiences=("a",), public_key_file=tmp_path, algorithms=("HS256",)
        )
    with pytest.raises(ValueError, match="exactly one"):
        IssuerSettings(name="x", issuer="https://x", audiences=("a",))
