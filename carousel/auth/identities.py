"""Callers made from credentials: a verified JWT, a static token, an X.509 subject."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from carousel.auth.errors import InvalidToken
from carousel.auth.jwt_tokens import VerifiedToken
from carousel.auth.scopes import GROUP_SHARING_SCOPE, grants_of, parse_scopes, split_scope_claim
from carousel.config.auth import LocalIdentity
from carousel.domain.callers import Caller
from carousel.domain.errors import ConfigError
from carousel.domain.text import text_fault

OWNER_MAX = 256  # the width of requests.owner


def jwt_caller_name(issuer_name: str, subject: str) -> str:
    """ "<issuer name>:<sub>": a subject is unique only within its issuer. Too long for the owner column,
    the subject is replaced by its SHA-256, which stays unique."""
    name = f"{issuer_name}:{subject}"
    if len(name) <= OWNER_MAX:
        return name
    return f"{issuer_name}:sha256:{hashlib.sha256(subject.encode()).hexdigest()}"


def _groups(claim: object) -> tuple[str, ...]:
    if claim is None:
        return ()
    if not isinstance(claim, list) or not all(isinstance(g, str) and 0 < len(g) <= 128 for g in claim):
        raise InvalidToken("wlcg.groups is not a list of group names (1 to 128 characters each)")
    for group in claim:  # a group becomes a request's group in the database
        fault = text_fault(group)
        if fault is not None:
            raise InvalidToken(f"a wlcg.groups entry {fault}")
    return tuple(dict.fromkeys(claim))


def caller_of_token(token: VerifiedToken) -> Caller:
    issuer = token.issuer
    groups = _groups(token.claims.get("wlcg.groups"))
    scopes = split_scope_claim(token.claims.get("scope"))
    parsed = parse_scopes(scopes, issuer.base_path)
    admin = bool(set(groups) & set(issuer.admin_groups) or parsed.others & set(issuer.admin_scopes))
    grants = grants_of(
        parsed,
        groups,
        base_path=issuer.base_path,
        group_access=issuer.group_access,
        admin=admin,
        share_groups=GROUP_SHARING_SCOPE in parsed.others,
    )
    return Caller(jwt_caller_name(issuer.name, token.subject), groups, grants)


def caller_of_identity(identity: LocalIdentity) -> Caller:
    parsed = parse_scopes(identity.scopes)
    grants = grants_of(parsed, identity.groups, admin=identity.admin, share_groups=identity.share_groups)
    return Caller(identity.name, identity.groups, grants)


def token_digest(token: str) -> str:
    """What the settings list for a static token. Tokens are long random strings, so a plain SHA-256 is
    enough: there is no dictionary to try, unlike with passwords."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def callers_by_key(identities: Sequence[tuple[str, LocalIdentity]], what: str) -> dict[str, Caller]:
    """The site's own callers by their key (a token digest, a subject); a bad scope stops the start."""
    callers: dict[str, Caller] = {}
    for key, identity in identities:
        try:
            callers[key] = caller_of_identity(identity)
        except InvalidToken as exc:
            raise ConfigError(f"auth.{what} {identity.name}: {exc.detail}") from exc
    return callers
