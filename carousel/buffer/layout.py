"""Where the buffer's files live. The root holds each staged file under its logical path, as clients name it;
a sibling directory `<root>.incoming` holds files being written, so a half-written file is never under the
tree that is served (over HTTP, or by xrootd with oss.localroot at the root).

No logical path can name a place outside the root: `..`, `.`, empty components, NUL and backslashes are
refused, and a path whose directories lead out through a symbolic link is refused too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

INCOMING_SUFFIX = ".incoming"
_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PROBE = ".carousel-write-probe"


class UnsafePath(ValueError):
    """A logical path or key that would lead outside the buffer."""


class BufferUnwritable(OSError):
    """The buffer's directory cannot be created or written to."""


@dataclass(frozen=True, slots=True)
class BufferLayout:
    root: Path

    @classmethod
    def at(cls, root: Path) -> BufferLayout:
        return cls(Path(os.path.abspath(root)))

    @property
    def incoming(self) -> Path:
        return self.root.with_name(self.root.name + INCOMING_SUFFIX)

    def final_path(self, logical_path: str) -> Path:
        """The file a logical path (e.g. /data/run1/f.root) names in the buffer; UnsafePath if it would lead
        outside it."""
        if "\x00" in logical_path or "\\" in logical_path:
            raise UnsafePath(f"path {logical_path!r} holds a NUL or a backslash")
        parts = logical_path.lstrip("/").split("/")
        if not logical_path.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise UnsafePath(f"path {logical_path!r} is not a plain absolute path")
        final = self.root.joinpath(*parts)
        # a directory on the way that is a symbolic link out of the buffer (made behind carousel's back)
        real_root = self.root.resolve()
        if not final.resolve().is_relative_to(real_root):
            raise UnsafePath(f"path {logical_path!r} leads outside the buffer")
        return final

    def logical_path(self, final: Path) -> str:
        """The logical path of a file under the root (the inverse of final_path)."""
        return "/" + final.relative_to(self.root).as_posix()

    def incoming_path(self, key: str) -> Path:
        """Where the library writes the bytes of the recall `key` (a file id)."""
        if not _KEY.fullmatch(key):
            raise UnsafePath(f"file key {key!r} is not a plain name")
        return self.incoming / key

    def prepare(self) -> None:
        """Create the root and the incoming directory and prove both writable; BufferUnwritable names the
        directory that is not."""
        for directory in (self.root, self.incoming):
            try:
                directory.mkdir(parents=True, exist_ok=True)
                probe = directory / _PROBE
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise BufferUnwritable(f"buffer directory {directory} is not writable: {reason}") from exc

    def sweep_incoming(self) -> int:
        """Remove what a crash left in the incoming directory (files half written); how many went. Run at
        start, before the library is handed anything."""
        removed = 0
        if not self.incoming.is_dir():
            return 0
        for entry in self.incoming.iterdir():
            if entry.name == _PROBE:
                continue
            try:
                if entry.is_dir() and not entry.is_symlink():
                    for below in sorted(entry.rglob("*"), reverse=True):
                        below.rmdir() if below.is_dir() and not below.is_symlink() else below.unlink()
                    entry.rmdir()
                else:
                    entry.unlink()
                removed += 1
            except FileNotFoundError:
                continue
        return removed

    def remove(self, final: Path) -> bool:
        """Delete a staged file's bytes and the directories left empty above it (never the root). True if
        there was a file."""
        try:
            final.unlink()
        except FileNotFoundError:
            return False
        parent = final.parent
        while parent != self.root and parent.is_relative_to(self.root):
            try:
                parent.rmdir()
            except OSError:  # not empty (or gone): stop
                break
            parent = parent.parent
        return True
