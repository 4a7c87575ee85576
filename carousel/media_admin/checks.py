"""What an admin's change must be before anything is written: a name and a reason that can be stored. Each
refusal names the field (problem+json, or the command line's one line)."""

from __future__ import annotations

from carousel.domain.errors import InvalidInput
from carousel.domain.media import MAX_MEDIA_NAME_LENGTH, MAX_MEDIA_REASON_LENGTH
from carousel.domain.text import text_fault


def checked_name(name: str, field: str) -> str:
    if not name:
        raise InvalidInput(f"no {field} name given", field=field)
    if len(name) > MAX_MEDIA_NAME_LENGTH:
        raise InvalidInput(f"a {field} name has at most {MAX_MEDIA_NAME_LENGTH} characters", field=field)
    fault = text_fault(name)
    if fault is not None:
        raise InvalidInput(f"the {field} name {fault}", field=field)
    return name


def checked_reason(reason: str) -> str:
    """Every change says why, on one line (it becomes the error of the files a broken tape fails)."""
    if not reason.strip():
        raise InvalidInput("say why: the reason is kept in the audit trail", field="reason")
    if len(reason) > MAX_MEDIA_REASON_LENGTH:
        raise InvalidInput(f"the reason has at most {MAX_MEDIA_REASON_LENGTH} characters", field="reason")
    fault = text_fault(reason)
    if fault is not None:
        raise InvalidInput(f"the reason {fault}", field="reason")
    return reason.strip()
