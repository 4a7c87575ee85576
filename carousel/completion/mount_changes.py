"""The mount history's changes of one batch of events, gathered in memory so that they are written in two
statements (carousel.db.completion_bulk): one for the mounts open before the batch (the reads they made, and
their close), one inserting the mounts the batch opened (with their reads, closed if the batch closes them).

A read counts on the mount of its tape and drive open at that moment in event order, as the one-by-one
statements did: the mount opened in this batch when there is one, else the one open before. An UNMOUNTED
closes every open mount of its tape and drive. Events that name no drive are not gathered here (the caller
writes them one by one: which mount they mean depends on what is open in the database).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

Key = tuple[str, str]  # tape, drive


@dataclass(slots=True)
class _OpenBefore:
    files: int = 0
    bytes: int = 0
    unmounted_at: datetime | None = None


@dataclass(slots=True)
class _Opened:
    mounted_at: datetime
    files: int = 0
    bytes: int = 0
    unmounted_at: datetime | None = None


class MountChanges:
    def __init__(self) -> None:
        self._before: dict[Key, _OpenBefore] = {}
        self._opened: dict[Key, list[_Opened]] = {}

    def __bool__(self) -> bool:
        return bool(self._before or self._opened)

    def mounted(self, key: Key, at: datetime) -> None:
        self._opened.setdefault(key, []).append(_Opened(at))

    def unmounted(self, key: Key, at: datetime) -> None:
        for mount in self._opened.get(key, ()):
            if mount.unmounted_at is None:
                mount.unmounted_at = at
        before = self._before.setdefault(key, _OpenBefore())
        if before.unmounted_at is None:
            before.unmounted_at = at

    def read(self, key: Key, size: int) -> None:
        opened = self._opened.get(key)
        if opened:
            last = opened[-1]
            if last.unmounted_at is None:
                last.files += 1
                last.bytes += size
            return  # closed in this batch: no mount of this drive is open (nothing to count, as before)
        before = self._before.setdefault(key, _OpenBefore())
        if before.unmounted_at is None:
            before.files += 1
            before.bytes += size

    def open_before_rows(self) -> list[dict[str, Any]]:
        return [
            {"tape": tape, "drive": drive, "files": b.files, "bytes": b.bytes, "unmounted_at": b.unmounted_at}
            for (tape, drive), b in self._before.items()
            if b.files or b.unmounted_at is not None
        ]

    def opened_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "tape": tape,
                "drive": drive,
                "mounted_at": m.mounted_at,
                "unmounted_at": m.unmounted_at,
                "files": m.files,
                "bytes": m.bytes,
            }
            for (tape, drive), mounts in self._opened.items()
            for m in mounts
        ]

    def clear(self) -> None:
        self._before.clear()
        self._opened.clear()
