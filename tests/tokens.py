"""A token issuer for tests: a real key pair made in the test, tokens signed with PyJWT, the public key
written as a PEM file or served as a JWKS document, and settings that trust it."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from carousel.config.auth import IssuerSettings, StaticToken

ISSUER = "https://iam.star.test"
AUDIENCE = "https://carousel.test"


class Issuer:
    def __init__(self, *, url: str = ISSUER, kid: str = "key-1", kind: str = "ec") -> None:
        self.url = url
        self.kid = kid
        if kind == "ec":
            self.key: Any = ec.generate_private_key(ec.SECP256R1())
            self.algorithm = "ES256"
        else:
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.algorithm = "RS256"

    def public_pem(self) -> str:
        return (
            self.key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )

    def jwks(self) -> dict[str, Any]:
        algorithm = jwt.algorithms.ECAlgorithm if self.algorithm == "ES256" else jwt.algorithms.RSAAlgorithm
        jwk = json.loads(algorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": self.algorithm}]}

    def write_pem(self, directory: Path) -> Path:
        path = directory / f"{self.kid}.pem"
        path.write_text(self.public_pem())
        return path

    def settings(
        self, key_file: Path | None = None, jwks_url: str | None = None, **extra: Any
    ) -> IssuerSettings:
        return IssuerSettings(
            name=extra.pop("name", "star"),
            issuer=self.url,
            audiences=(AUDIENCE,),
            public_key_file=key_file,
            jwks_url=jwks_url,
            algorithms=(self.algorithm,),
            **extra,
        )

    def mint(
        self,
        now: datetime,
        *,
        sub: str = "alice",
        scope: str | None = "storage.stage:/",
        groups: Sequence[str] | None = None,
        lifetime_s: float = 3600,
        audience: str | list[str] | None = AUDIENCE,
        issuer: str | None = None,
        signing_key: Any = None,
        kid: str | None = None,
        **claims: Any,
    ) -> str:
        payload: dict[str, Any] = {
            "iss": issuer or self.url,
            "sub": sub,
            "iat": int(now.timestamp()),
            "nbf": int(now.timestamp()),
            "exp": int(now.timestamp() + lifetime_s),
            "jti": secrets.token_hex(8),
            "wlcg.ver": "1.0",
        }
        if audience is not None:
            payload["aud"] = audience
        if scope is not None:
            payload["scope"] = scope
        if groups is not None:
            payload["wlcg.groups"] = list(groups)
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(
            payload, signing_key or self.key, algorithm=self.algorithm, headers={"kid": kid or self.kid}
        )


def static_token(name: str, **fields: Any) -> tuple[str, StaticToken]:
    """A fresh random token and the settings entry that lists it by its SHA-256."""
    token = secrets.token_urlsafe(32)
    return token, StaticToken(name=name, sha256=hashlib.sha256(token.encode()).hexdigest(), **fields)


def forged_token(header: dict[str, Any], claims: dict[str, Any], signature: str = "A" * 86) -> str:
    """A token with the header and claims given and a junk signature: what a forger without the key sends."""

    def part(value: dict[str, Any]) -> str:
        return jwt.utils.base64url_encode(json.dumps(value).encode()).decode()

    return f"{part(header)}.{part(claims)}.{signature}"
