"""A short-lived cache of big Tape REST status documents.

Clients poll: fifty of them polling one 10,000-file request would otherwise have the database render the
same large document fifty times a second. A document of at least `min_files` files is kept `ttl_s`
seconds; once older, it is still answered for another `ttl_s` while one background thread renders it
anew, so no poll waits for a render except the first. Smaller documents are always rendered fresh.
Each entry carries the version of the request it was rendered at (`requests.status_version`, its state
and end), which the route reads on every call, in its own transaction: an entry of another version is never
answered. So a cancel or delete made through any API process, on any host, is never contradicted by a
cached document of another afterwards; writes made through this process also drop the entry at once. The
scheduler's progress does not change the version (a request's files move on every cycle): it shows up
within 2 x `ttl_s`, in every process alike (docs/decisions.md, "Several API processes").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

log = logging.getLogger(__name__)

# render() -> (document, number of files in it)
Render = Callable[[], tuple[bytes, int]]


@dataclass(slots=True)
class _Entry:
    body: bytes
    fresh_until: float
    version: Hashable
    refreshing: bool = False


class StatusCache:
    def __init__(
        self,
        *,
        ttl_s: float,
        min_files: int,
        max_entries: int = 256,
        monotonic: Callable[[], float] = time.monotonic,
        run_in_background: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self.ttl_s = ttl_s
        self.min_files = min_files
        self.max_entries = max_entries
        self._monotonic = monotonic
        self._run_in_background = run_in_background or _daemon_thread
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._guard = threading.Lock()
        # Striped: one renderer per request at a time, with a bounded number of locks.
        self._render_locks = tuple(threading.Lock() for _ in range(64))

    def get_or_render(
        self,
        owner: str,
        request_id: str,
        render_here: Render,
        render_apart: Render,
        *,
        version: Hashable = None,
    ) -> bytes:
        """The document for (owner, request_id) at `version` (read by the caller in its transaction, before
        this call). `render_here` renders it in the caller's transaction; `render_apart` in a transaction of
        its own (used by the background refresh, whose answer is at least as new as `version`)."""
        if self.ttl_s <= 0:
            return render_here()[0]
        key = (owner, request_id)
        cached = self._cached(key, version, render_apart)
        if cached is not None:
            return cached
        with self._render_locks[hash(key) % len(self._render_locks)]:  # the others take its answer
            cached = self._cached(key, version, render_apart)
            if cached is not None:
                return cached
            body, files = render_here()
            self._store(key, body, files, version)
            return body

    def invalidate(self, request_id: str) -> None:
        with self._guard:
            for key in [key for key in self._entries if key[1] == request_id]:
                del self._entries[key]

    def _cached(self, key: tuple[str, str], version: Hashable, render_apart: Render) -> bytes | None:
        now = self._monotonic()
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.version != version:  # written since (here or in another process): never answered
                del self._entries[key]
                return None
            if now < entry.fresh_until:
                return entry.body
            if now >= entry.fresh_until + self.ttl_s:
                del self._entries[key]
                return None
            if not entry.refreshing:
                entry.refreshing = True
                self._run_in_background(lambda: self._refresh(key, entry, render_apart))
            return entry.body

    def _refresh(self, key: tuple[str, str], stale: _Entry, render_apart: Render) -> None:
        try:
            body, files = render_apart()
        except Exception:
            log.warning("refreshing the status of request %s failed", key[1], exc_info=True)
            with self._guard:
                if self._entries.get(key) is stale:
                    del self._entries[key]
            return
        with self._guard:
            if self._entries.get(key) is not stale:
                return  # invalidated meanwhile: the next poll renders it fresh
        self._store(key, body, files, stale.version)

    def _store(self, key: tuple[str, str], body: bytes, files: int, version: Hashable) -> None:
        if files < self.min_files:
            return
        with self._guard:
            if key not in self._entries and len(self._entries) >= self.max_entries:
                oldest = min(self._entries, key=lambda k: self._entries[k].fresh_until)
                del self._entries[oldest]
            self._entries[key] = _Entry(body, self._monotonic() + self.ttl_s, version)


def _daemon_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="status-cache-refresh", daemon=True).start()
