"""The audit trail of tape and drive changes, newest first, paged by an opaque cursor (the last id shown)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import media_queries as m
from carousel.domain.errors import InvalidInput
from carousel.domain.media import MediaAuditEntry, MediaKind


@dataclass(frozen=True, slots=True)
class MediaAuditPage:
    entries: list[MediaAuditEntry]
    next_cursor: str | None


def media_audit(
    session: Session, *, limit: int, cursor: str | None = None, kind: MediaKind | None = None
) -> MediaAuditPage:
    before: int | None = None
    if cursor is not None:
        if not cursor.isdigit() or not cursor.isascii():
            raise InvalidInput("not a cursor this service gave", field="cursor")
        before = int(cursor)
    entries = m.media_audit(session, limit=limit, before_id=before, kind=kind)
    following = str(entries[-1].id) if len(entries) == limit else None
    return MediaAuditPage(entries, following)
