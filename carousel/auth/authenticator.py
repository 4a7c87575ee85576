"""Who calls: a bearer token when one is sent (a static token, else a JWT), else an X.509 subject forwarded
by a trusted TLS proxy, else the anonymous caller when the settings allow it. A credential that is sent
and fails is refused (401): it never falls back to anonymous."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from ipaddress import ip_address

from carousel.auth.errors import InsufficientScope, InvalidToken, MissingCredentials
from carousel.auth.identities import caller_of_token, callers_by_key, token_digest
from carousel.auth.jwt_tokens import JwtVerifier
from carousel.config.auth import AuthSettings
from carousel.domain.callers import ANONYMOUS, Caller
from carousel.domain.clock import Clock

log = logging.getLogger(__name__)


class Authenticator:
    def __init__(self, settings: AuthSettings, *, anonymous: bool, clock: Clock) -> None:
        self._anonymous = anonymous
        self._jwt = JwtVerifier(settings.issuers, clock)
        self._static = callers_by_key([(t.sha256, t) for t in settings.static_tokens], "static_tokens")
        self._x509 = settings.x509
        self._subjects = callers_by_key([(s.subject, s) for s in settings.x509.subjects], "x509.subjects")

    def authenticate(
        self, *, authorization: str | None, peer: str | None, headers: Mapping[str, str]
    ) -> Caller:
        if authorization is not None:
            return self._bearer(authorization)
        subject = self._forwarded_subject(peer, headers)
        if subject is not None:
            return self._x509_caller(subject)
        if self._anonymous:
            return ANONYMOUS
        raise MissingCredentials(
            "anonymous calls are turned off: send a bearer token (Authorization: Bearer ...)"
        )

    def _bearer(self, authorization: str) -> Caller:
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise InvalidToken("the Authorization header must be 'Bearer <token>'")
        static = self._static.get(token_digest(token))
        if static is not None:
            return static
        if not self._jwt.looks_like_jwt(token):
            raise InvalidToken("the token is not one this service knows")
        return caller_of_token(self._jwt.verify(token))

    def _forwarded_subject(self, peer: str | None, headers: Mapping[str, str]) -> str | None:
        subject = headers.get(self._x509.subject_header)
        if subject is None or not self._x509.trusted_proxies:
            return None
        try:
            address = ip_address(peer or "")
        except ValueError:
            return None
        if not any(address in network for network in self._x509.trusted_proxies):
            # Anyone can send the header: from elsewhere than the proxy it means nothing.
            log.warning("ignoring %s from %s, which is not a trusted proxy", self._x509.subject_header, peer)
            return None
        verify = self._x509.verify_header
        if verify is not None and headers.get(verify, "").upper() != "SUCCESS":
            raise InvalidToken(f"the proxy did not verify the client certificate ({verify} is not SUCCESS)")
        return subject

    def _x509_caller(self, subject: str) -> Caller:
        caller = self._subjects.get(subject)
        if caller is None:
            raise InsufficientScope(f"the certificate subject {subject[:200]!r} is not listed in auth.x509")
        return caller
