"""What a caller's credential allows, and the checks every use case makes against it.

A credential either carries capabilities (WLCG `storage.*` scopes, each with a path) and is held to them,
or carries none and is limited only by ownership (the anonymous caller, a group-authorised token). Paths
are compared after normalisation, segment by segment: `/star/data` covers `/star/data` and
`/star/data/a.root`, never `/star/database`; `/star/data/` (a trailing slash) covers only what is inside.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from carousel.domain.errors import Forbidden


@dataclass(frozen=True, slots=True)
class PathScope:
    """One authorised area: `prefix` is normalised (no trailing slash, "/" for everything)."""

    prefix: str
    directory_only: bool = False

    def covers(self, path: str) -> bool:
        if self.prefix == "/":
            return True
        if path.startswith(self.prefix + "/"):
            return True
        return path == self.prefix and not self.directory_only


def covered(scopes: Iterable[PathScope], path: str) -> bool:
    return any(scope.covers(path) for scope in scopes)


@dataclass(frozen=True, slots=True)
class Grants:
    """`stage`, `poll` and `read` are None when the credential is not limited by capabilities; else the
    areas where files may be staged (and so cancelled, released, deleted); where their status and archive
    info may be asked (every storage.* scope allows that, as the WLCG profile says of "stat"); and where a
    staged file's bytes may be read (`storage.read`, and `storage.stage`, its superset). `shared_groups`:
    groups whose requests the caller may see and manage as its own. `any_group`: may name any group in a
    request, not only its own."""

    stage: tuple[PathScope, ...] | None = None
    poll: tuple[PathScope, ...] | None = None
    read: tuple[PathScope, ...] | None = None
    admin: bool = False
    shared_groups: frozenset[str] = frozenset()
    any_group: bool = True

    @property
    def capability_based(self) -> bool:
        return self.stage is not None or self.poll is not None or self.read is not None

    def may_stage(self, path: str) -> bool:
        return self.stage is None or covered(self.stage, path)

    def may_poll(self, path: str) -> bool:
        """May see this path's state in a request, and its archive info."""
        return self.poll is None or covered(self.poll, path)

    def may_read(self, path: str) -> bool:
        """May read the bytes of this path's staged copy (GET or HEAD on the file at the service)."""
        return self.read is None or covered(self.read, path)

    @property
    def stages_everything(self) -> bool:
        return self.stage is None or any(scope.prefix == "/" for scope in self.stage)

    @property
    def polls_everything(self) -> bool:
        """No path is outside the poll scopes: status needs no check per file."""
        return self.poll is None or any(scope.prefix == "/" for scope in self.poll)


UNRESTRICTED = Grants()


def require_stage(grants: Grants, paths: Sequence[str], *, field: str) -> None:
    """Forbidden naming the first (normalised) path that no stage scope covers."""
    if grants.stage is None:
        return
    for path in paths:
        if not covered(grants.stage, path):
            raise Forbidden(
                f"{field}: no storage.stage scope of the credential covers {path[:200]!r}", field=field
            )


def require_some_stage_scope(grants: Grants, action: str) -> None:
    """Cancel, release and delete change what is staged: a token with capabilities needs a stage scope."""
    if grants.stage is not None and not grants.stage:
        raise Forbidden(f"{action} needs a storage.stage scope, and the token has none")


def require_some_poll_scope(grants: Grants, action: str) -> None:
    """Status and archive info: any storage.* scope of some path (each file is then judged by its path)."""
    if grants.poll is not None and not grants.poll:
        raise Forbidden(f"{action} needs a storage.* scope, and the token has none")


def require_read(grants: Grants, path: str, *, field: str) -> None:
    """Reading a staged file's bytes: a storage.read (or storage.stage) scope covering the path."""
    if not grants.may_read(path):
        raise Forbidden(
            f"{field}: no storage.read or storage.stage scope of the credential covers {path[:200]!r}",
            field=field,
        )


def require_group(grants: Grants, groups: Sequence[str], group: str) -> None:
    """A caller limited to its own groups may put a request only in one of them ("default" when it has
    none), so that it cannot spend another group's fair share or queue quota."""
    if grants.any_group:
        return
    allowed = tuple(groups) or ("default",)
    if group not in allowed:
        shown = ", ".join(repr(g) for g in allowed[:5])
        raise Forbidden(f"group {group[:128]!r} is not one of the caller's groups ({shown})", field="group")
