"""A request's activity: what the native API names outright, and what Tape REST clients (FTS, gfal2) send
as targeted metadata for this endpoint, `files[i].targetedMetadata[<sitename>].activity`, keyed by the
sitename of the discovery document. Metadata for other endpoints, and other keys of ours, are ignored, as
the standard asks of what a service does not use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from carousel.domain.errors import InvalidInput

ACTIVITY_MAX_LENGTH = 128
# Words of letters, digits and _.:@+- separated by single spaces: FTS's activities ("Data Consolidation",
# "Production Input") have spaces; nothing that could be a control character or markup.
ACTIVITY_PATTERN = r"^[A-Za-z0-9_.:@+-]+( [A-Za-z0-9_.:@+-]+)*$"
_ACTIVITY = re.compile(ACTIVITY_PATTERN)


def valid_activity(value: object, *, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: an activity is a string", field=field)
    if not 1 <= len(value) <= ACTIVITY_MAX_LENGTH or not _ACTIVITY.fullmatch(value):
        raise InvalidInput(
            f"{field}: {value[:ACTIVITY_MAX_LENGTH]!r} is not an activity (1 to {ACTIVITY_MAX_LENGTH} of "
            "letters, digits and _.:@+-, words separated by single spaces)",
            field=field,
        )
    return value


def activity_of_targeted_metadata(targeted: Sequence[Any], site_name: str) -> str | None:
    """The activity the files' targeted metadata names for this site, or None when none names one. One
    request has one activity: files naming different ones are refused (400 naming the second)."""
    found: tuple[str, str] | None = None  # (field, activity)
    for index, metadata in enumerate(targeted):
        if not isinstance(metadata, dict) or site_name not in metadata:
            continue  # none, or only for other endpoints
        field = f"files[{index}].targetedMetadata.{site_name}"
        ours = metadata[site_name]
        if not isinstance(ours, dict):
            raise InvalidInput(f"{field}: the metadata for this endpoint must be an object", field=field)
        if "activity" not in ours:
            continue
        field += ".activity"
        activity = valid_activity(ours["activity"], field=field)
        if found is not None and activity != found[1]:
            raise InvalidInput(
                f"{field}: {activity!r} differs from {found[1]!r} ({found[0]}); a request has one activity",
                field=field,
            )
        found = found or (field, activity)
    return None if found is None else found[1]
