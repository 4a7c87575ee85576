"""Forged tokens that name a trusted issuer but carry a junk signature, an algorithm that does not fit the
issuer's key, or any header and claims at all: each is an InvalidToken (a 401), never another exception
(which was a 500, and its logging stalled the service)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from carousel.auth.errors import InvalidToken
from carousel.auth.jwt_tokens import JwtVerifier
from carousel.config.auth import IssuerSettings
from carousel.domain.clock import ManualClock
from tests.tokens import AUDIENCE, Issuer, forged_token

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CLAIMS = {"sub": "mallory", "aud": AUDIENCE, "exp": int(NOW.timestamp()) + 600}


def _verifier(issuer: Issuer, directory: Path, **settings: Any) -> JwtVerifier:
    # the default algorithms (RS256 and ES256), as a site that lists none gets them
    entry = IssuerSettings(
        name="star",
        issuer=issuer.url,
        audiences=(AUDIENCE,),
        public_key_file=issuer.write_pem(directory),
        **settings,
    )
    return JwtVerifier((entry,), ManualClock(NOW))


@pytest.mark.parametrize(
    ("kind", "algorithm", "settings"),
    [
        ("rsa", "ES256", {}),  # the reported case: an RSA key, a token saying ES256
        ("ec", "RS256", {}),
        ("ec", "PS256", {"algorithms": ("PS256",)}),
        ("ec", "ES384", {"algorithms": ("ES384",)}),  # an EC key of another curve
        ("ec", "EdDSA", {"algorithms": ("EdDSA",)}),
    ],
)
def test_an_algorithm_that_does_not_fit_the_key_is_refused_before_verifying(
    tmp_path: Path, kind: str, algorithm: str, settings: dict[str, Any]
) -> None:
    issuer = Issuer(kind=kind)
    verifier = _verifier(issuer, tmp_path, **settings)
    token = forged_token({"alg": algorithm, "typ": "JWT"}, {"iss": issuer.url, **CLAIMS})
    with pytest.raises(InvalidToken, match="does not fit the issuer's key"):
        verifier.verify(token)


def test_a_junk_signature_of_the_right_algorithm_is_a_bad_signature(tmp_path: Path) -> None:
    issuer = Issuer(kind="rsa")
    token = forged_token({"alg": "RS256"}, {"iss": issuer.url, **CLAIMS})
    with pytest.raises(InvalidToken, match="signature"):
        _verifier(issuer, tmp_path).verify(token)


def test_an_ec_key_of_the_right_curve_fits(tmp_path: Path) -> None:
    issuer = Issuer(kind="ec")
    assert isinstance(issuer.key.curve, ec.SECP256R1)
    assert _verifier(issuer, tmp_path).verify(issuer.mint(NOW)).subject == "alice"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def rsa_issuer_verifier(tmp_path_factory: pytest.TempPathFactory) -> tuple[Issuer, JwtVerifier]:
    issuer = Issuer(kind="rsa")
    return issuer, _verifier(issuer, tmp_path_factory.mktemp("keys"))


@given(
    algorithm=st.sampled_from(["RS256", "ES256", "PS256", "EdDSA", "HS256", "none", ""]) | _json,
    header=st.dictionaries(st.sampled_from(["kid", "typ", "crit", "b64", "jwk", "x5u"]), _json, max_size=3),
    claims=st.dictionaries(
        st.sampled_from(["sub", "aud", "exp", "nbf", "iat", "scope", "wlcg.groups", "wlcg.ver"]),
        _json,
        max_size=6,
    ),
    signature=st.text(alphabet="ABCDabcd0123-_", max_size=120),  # base64url: reaches the key
)
def test_any_forged_header_and_claims_are_an_invalid_token(
    rsa_issuer_verifier: tuple[Issuer, JwtVerifier],
    algorithm: object,
    header: dict[str, Any],
    claims: dict[str, Any],
    signature: str,
) -> None:
    issuer, verifier = rsa_issuer_verifier
    token = forged_token({**header, "alg": algorithm}, {**claims, "iss": issuer.url}, signature)
    if not verifier.looks_like_jwt(token):
        return  # the authenticator refuses it before the verifier
    with pytest.raises(InvalidToken):
        verifier.verify(token)
