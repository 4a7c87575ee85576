"""WLCG storage scopes (WLCG Common JWT Profiles 1.1, section 2.2.1) turned into Grants.

`storage.stage:/p` allows staging under /p (and cancelling, releasing, deleting) and is a superset of
`storage.read:/p`, which allows reading staged files' bytes. Every `storage.*` scope, `storage.poll` (what
CTA's checks and pollers mint) among them, allows status and archive info ("stat") under its path. A
`storage.*` scope without a path makes the token invalid, as the profile requires. Paths are
percent-decoded, normalised, and placed inside the issuer's base path. The table of which scope allows which
call is in docs/security.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from carousel.auth.errors import InvalidToken
from carousel.domain.grants import Grants, PathScope

STAGE = "storage.stage"
READ = "storage.read"
POLL_ONLY = frozenset({"storage.poll", "storage.create", "storage.modify"})  # status and archive info only
GROUP_SHARING_SCOPE = "carousel.group"  # the token's holder shares its groups' requests
_SLASHES = re.compile(r"//+")


@dataclass(frozen=True, slots=True)
class ParsedScopes:
    stage: tuple[PathScope, ...]
    poll: tuple[PathScope, ...]  # every storage scope's area
    read: tuple[PathScope, ...]  # storage.read's and storage.stage's
    others: frozenset[str]  # every scope that is not a storage capability, as written

    @property
    def has_capabilities(self) -> bool:
        return bool(self.poll)


def split_scope_claim(claim: object) -> list[str]:
    """The `scope` claim: a space-separated string (RFC 8693), or a list of strings some issuers send."""
    if claim is None:
        return []
    if isinstance(claim, str):
        return claim.split()
    if isinstance(claim, list) and all(isinstance(item, str) for item in claim):
        return [part for item in claim for part in item.split()]
    raise InvalidToken("the scope claim is neither a string nor a list of strings")


def scope_path(raw: str, base_path: str) -> PathScope:
    """The area a scope path names inside base_path; InvalidToken when it is not absolute or climbs."""
    try:
        decoded = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise InvalidToken(f"scope path {raw[:80]!r} is not UTF-8 once unescaped") from None
    if not decoded.startswith("/"):
        raise InvalidToken(f"scope path {raw[:80]!r} is not absolute")
    segments = [s for s in _SLASHES.sub("/", decoded).split("/") if s not in ("", ".")]
    if ".." in segments:
        raise InvalidToken(f"scope path {raw[:80]!r} contains '..'")
    joined = "/".join([base_path.rstrip("/"), *segments]) or "/"
    directory_only = decoded.endswith("/") and bool(segments)
    return PathScope(joined if joined.startswith("/") else "/" + joined, directory_only)


def parse_scopes(scopes: Iterable[str], base_path: str = "/") -> ParsedScopes:
    stage: list[PathScope] = []
    poll: list[PathScope] = []
    read: list[PathScope] = []
    others: set[str] = set()
    for scope in scopes:
        name, colon, path = scope.partition(":")
        if name in (STAGE, READ) or name in POLL_ONLY:
            if not colon or not path:
                raise InvalidToken(f"scope {scope[:80]!r} has no path (the WLCG profile requires one)")
            area = scope_path(path, base_path)
            poll.append(area)
            if name in (STAGE, READ):
                read.append(area)
            if name == STAGE:
                stage.append(area)
        else:
            others.add(scope)
    return ParsedScopes(tuple(stage), tuple(poll), tuple(read), frozenset(others))


def grants_of(
    parsed: ParsedScopes,
    groups: Sequence[str],
    *,
    base_path: str = "/",
    group_access: Sequence[str] = (),
    admin: bool = False,
    share_groups: bool = False,
) -> Grants:
    """Capabilities when the credential has any; else (as the profile says) its groups decide: one of
    `group_access` allows everything inside base_path, none allows nothing."""
    if parsed.has_capabilities:
        stage, poll, read = parsed.stage, parsed.poll, parsed.read
    elif set(groups) & set(group_access):
        stage = poll = read = (PathScope(base_path),)
    else:
        stage = poll = read = ()
    return Grants(
        stage=stage,
        poll=poll,
        read=read,
        admin=admin,
        shared_groups=frozenset(groups) if share_groups else frozenset(),
        any_group=False,
    )
