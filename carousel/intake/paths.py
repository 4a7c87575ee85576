"""Path validation and normalisation: what every API accepts as a file path.

A path is absolute, at most `max_bytes` long in UTF-8, free of NUL and control characters and of `..`
segments. Duplicate slashes collapse, `.` segments and a trailing slash go: the normalised path is the one
key of a file, whoever names it and however.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carousel.domain.errors import InvalidInput

# C0 controls (NUL included), DEL and C1 controls: never part of a file name a client means to send.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SLASHES = re.compile(r"//+")


def _describe(char: str) -> str:
    return "a NUL byte" if char == "\x00" else f"the control character {char!r}"


def normalise_path(raw: str, *, max_bytes: int) -> str:
    """The normalised path, or InvalidInput saying what is wrong with it (the caller adds the field)."""
    if len(raw) > max_bytes:  # cheap bound first: a character is at least one byte
        raise InvalidInput(f"path is longer than {max_bytes} bytes")
    if not raw.startswith("/"):
        raise InvalidInput(f"path {raw[:80]!r} is not absolute (must start with '/')")
    bad = _CONTROL.search(raw)
    if bad is not None:
        raise InvalidInput(f"path {raw[:80]!r} contains {_describe(bad.group())}")
    try:
        size = len(raw.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"path {raw[:80]!r} is not valid Unicode text") from None
    if size > max_bytes:
        raise InvalidInput(f"path is longer than {max_bytes} bytes")
    path = _SLASHES.sub("/", raw) if "//" in raw else raw
    if "/." in path:
        segments = path.split("/")
        if ".." in segments:
            raise InvalidInput(f"path {raw[:80]!r} contains a '..' segment")
        path = "/".join(segment for segment in segments if segment != ".") or "/"
        if not path.startswith("/"):
            path = "/" + path
    path = path.rstrip("/")
    if not path:
        raise InvalidInput("path '/' names no file")
    return path


def normalise_paths(raw_paths: Sequence[str], *, max_bytes: int, field: str) -> list[str]:
    """Every path normalised, in order (duplicates kept). `field` is a format string taking the index, so
    an error names the one at fault, e.g. "files[3].path"."""
    normalised: list[str] = []
    for index, raw in enumerate(raw_paths):
        try:
            normalised.append(normalise_path(raw, max_bytes=max_bytes))
        except InvalidInput as exc:
            name = field.format(index)
            raise InvalidInput(f"{name}: {exc.detail}", field=name) from None
    return normalised
