"""JWT bearer tokens from configured issuers, verified with PyJWT.

The issuer is read from the unverified token only to choose whose keys to verify it with; everything else
comes from the verified claims. Keys come from a local file (a PEM public key or a JWKS document) or from a
JWKS URL fetched by PyJWT's PyJWKClient (cached; an unknown `kid` fetches again). Expiry and not-before
are judged on the injected clock, so tests run in virtual time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from carousel.auth.errors import InvalidToken
from carousel.auth.key_fit import key_fits
from carousel.config.auth import ANY_AUDIENCE, IssuerSettings
from carousel.domain.clock import Clock
from carousel.domain.errors import ConfigError, Unavailable
from carousel.domain.text import text_fault

_WLCG_VERSION = re.compile(r"^1\.[0-9]+$")
_MAX_TOKEN_CHARS = 16_384  # far above any real token; bounds the work a garbage header costs


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    issuer: IssuerSettings
    subject: str
    claims: Mapping[str, Any]


class _FileKeys:
    """A PEM public key (for every `kid`) or a JWKS document (keys chosen by `kid`), read once at start."""

    def __init__(self, issuer: IssuerSettings) -> None:
        assert issuer.public_key_file is not None
        path = issuer.public_key_file
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"issuer {issuer.name}: cannot read public_key_file {path}: {exc}") from exc
        self._pem: PublicKeyTypes | None = None
        self._jwks: jwt.PyJWKSet | None = None
        try:
            if text.lstrip().startswith("{"):
                self._jwks = jwt.PyJWKSet.from_dict(json.loads(text))
            else:
                self._pem = load_pem_public_key(text.encode())
        except (ValueError, TypeError, jwt.PyJWKSetError) as exc:
            raise ConfigError(
                f"issuer {issuer.name}: {path} is neither a PEM public key nor a JWKS document: {exc}"
            ) from exc

    def key_for(self, token: str, kid: str | None) -> Any:
        if self._pem is not None:
            return self._pem
        assert self._jwks is not None
        for key in self._jwks.keys:
            if key.key_id == kid:
                return key
        raise InvalidToken(f"no key {kid!r} among the issuer's keys")


class _UrlKeys:
    def __init__(self, issuer: IssuerSettings) -> None:
        assert issuer.jwks_url is not None
        self._name = issuer.name
        self._client = jwt.PyJWKClient(
            issuer.jwks_url,
            cache_keys=True,
            lifespan=issuer.jwks_cache_s,
            timeout=10,
            cooldown_duration=issuer.jwks_refetch_cooldown_s,
        )

    def key_for(self, token: str, kid: str | None) -> Any:
        try:
            return self._client.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            # The client is not at fault: it may retry once the issuer's keys can be fetched again.
            raise Unavailable(f"the keys of issuer {self._name} cannot be fetched now: {exc}") from exc
        except (jwt.PyJWKClientError, jwt.PyJWKError, jwt.DecodeError) as exc:
            raise InvalidToken(f"no key of issuer {self._name} verifies this token: {exc}") from exc


class JwtVerifier:
    def __init__(self, issuers: tuple[IssuerSettings, ...], clock: Clock) -> None:
        self._clock = clock
        self._issuers = {issuer.issuer: issuer for issuer in issuers}
        self._keys: dict[str, _FileKeys | _UrlKeys] = {
            issuer.issuer: _FileKeys(issuer) if issuer.public_key_file is not None else _UrlKeys(issuer)
            for issuer in issuers
        }

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2 and len(token) <= _MAX_TOKEN_CHARS

    def verify(self, token: str) -> VerifiedToken:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"the token is not a well-formed JWT: {exc}") from exc
        claimed_issuer = unverified.get("iss")
        issuer = self._issuers.get(claimed_issuer) if isinstance(claimed_issuer, str) else None
        if issuer is None:
            raise InvalidToken(f"the token's issuer {str(claimed_issuer)[:200]!r} is not trusted here")
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in issuer.algorithms:
            raise InvalidToken(f"algorithm {str(algorithm)[:20]!r} is not accepted for this issuer")
        kid = header.get("kid")
        key = self._keys[issuer.issuer].key_for(token, kid if isinstance(kid, str) else None)
        # A JWKS entry (PyJWK) holds its cryptography key in .key; a PEM file gives the key itself.
        if not key_fits(algorithm, getattr(key, "key", key)):
            raise InvalidToken(f"algorithm {algorithm!r} does not fit the issuer's key")
        audiences = [*issuer.audiences, *([ANY_AUDIENCE] if issuer.accept_any_audience else [])]
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(issuer.algorithms),
                audience=audiences,
                issuer=issuer.issuer,
                options={
                    "require": ["exp", "iss", "aud", "sub"],
                    # judged below on the injected clock
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidSignatureError as exc:
            raise InvalidToken("the token's signature does not verify") from exc
        except jwt.InvalidAudienceError as exc:
            raise InvalidToken(f"the token is not meant for this service ({exc})") from exc
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"the token is not valid: {exc}") from exc
        except (TypeError, ValueError) as exc:  # PyJWT's own checks missed it: still the token's fault
            raise InvalidToken(f"the token cannot be verified: {type(exc).__name__}") from exc
        self._check_times(claims, issuer)
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise InvalidToken("the token's subject is not a string of 1 to 255 characters")
        fault = text_fault(subject)  # it names the caller, and so owns requests in the database
        if fault is not None:
            raise InvalidToken(f"the token's subject {fault}")
        version = claims.get("wlcg.ver")
        if version is not None and not (isinstance(version, str) and _WLCG_VERSION.match(version)):
            raise InvalidToken(f"wlcg.ver {str(version)[:20]!r} is not a version 1 token profile")
        return VerifiedToken(issuer, subject, claims)

    def _check_times(self, claims: Mapping[str, Any], issuer: IssuerSettings) -> None:
        now = self._clock.now().timestamp()
        expires = claims["exp"]
        if not isinstance(expires, int | float) or isinstance(expires, bool):
            raise InvalidToken("the token's exp is not a number")
        if now >= expires:
            raise InvalidToken("the token has expired")
        for name in ("nbf", "iat"):
            value = claims.get(name)
            if value is None:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InvalidToken(f"the token's {name} is not a number")
            if value > now + issuer.leeway_s:
                raise InvalidToken(f"the token is not valid yet ({name} is in the future)")
