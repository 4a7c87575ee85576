"""The audit trail of tape and drive changes, newest first, paged by an opaque cursor (the last id shown)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import media_queries as m
from carousel.domain.errors import InvalidInput
from carousel.domain.media import MediaAuditEntry, MediaKind
from carousel.media_admin.libraries import known_library, site_libraries
from hsm_adapters.base import HsmAdapter


@dataclass(frozen=True, slots=True)
class MediaAuditPage:
    entries: list[MediaAuditEntry]
    next_cursor: str | None


def media_audit(
    session: Session,
    *,
    limit: int,
    cursor: str | None = None,
    kind: MediaKind | None = None,
    library: str | None = None,
    adapter: HsmAdapter | None = None,
) -> MediaAuditPage:
    """`library`: that library's tapes and drives only (one of `adapter`'s, the site's: 404 otherwise)."""
    if library is not None:
        known_library(site_libraries(adapter), library)
    before: int | None = None
    if cursor is not None:
        if not cursor.isdigit() or not cursor.isascii():
            raise InvalidInput("not a cursor this service gave", field="cursor")
        before = int(cursor)
    entries = m.media_audit(session, limit=limit, before_id=before, kind=kind, library=library)
    following = str(entries[-1].id) if len(entries) == limit else None
    return MediaAuditPage(entries, following)
