"""The status cache: big documents kept for ttl, refreshed in the background, dropped by our own writes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from carousel.api.status_cache import StatusCache


class Clock:
    """A monotonic time source moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Renderer:
    def __init__(self, files: int, name: str = "doc") -> None:
        self.files = files
        self.name = name
        self.calls = 0
        self.fail = False

    def __call__(self) -> tuple[bytes, int]:
        if self.fail:
            raise RuntimeError("database gone")
        self.calls += 1
        return f"{self.name}{self.calls}".encode(), self.files


@pytest.fixture
def clock() -> Clock:
    """Monotonic seconds, moved by hand (shadows the domain clock fixture: the cache takes a float)."""
    return Clock()


@pytest.fixture
def background() -> list[Callable[[], None]]:
    return []


def _cache(clock: Clock, background: list[Callable[[], None]], *, ttl: float = 1.0) -> StatusCache:
    return StatusCache(ttl_s=ttl, min_files=100, monotonic=clock, run_in_background=background.append)


def test_big_documents_are_kept_for_ttl(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background)
    render = Renderer(files=100)
    assert cache.get_or_render("alice", "r1", render, render) == b"doc1"
    clock.now = 0.99
    assert cache.get_or_render("alice", "r1", render, render) == b"doc1"
    assert render.calls == 1
    # Another owner never shares an entry.
    assert cache.get_or_render("bob", "r1", render, render) == b"doc2"


def test_small_documents_are_always_fresh(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background)
    render = Renderer(files=99)
    assert cache.get_or_render("alice", "r1", render, render) == b"doc1"
    assert cache.get_or_render("alice", "r1", render, render) == b"doc2"


def test_stale_answer_while_the_background_refreshes(
    clock: Clock, background: list[Callable[[], None]]
) -> None:
    cache = _cache(clock, background)
    here, apart = Renderer(files=100), Renderer(files=100, name="apart")
    cache.get_or_render("alice", "r1", here, apart)
    clock.now = 1.5
    assert cache.get_or_render("alice", "r1", here, apart) == b"doc1"  # stale, refresh scheduled
    assert cache.get_or_render("alice", "r1", here, apart) == b"doc1"
    assert len(background) == 1  # only one refresh at a time
    background.pop()()
    assert cache.get_or_render("alice", "r1", here, apart) == b"apart1"
    assert here.calls == 1
    clock.now = 2.4
    assert cache.get_or_render("alice", "r1", here, apart) == b"apart1"  # fresh for ttl from the refresh


def test_too_stale_is_rendered_again_here(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background)
    render = Renderer(files=100)
    cache.get_or_render("alice", "r1", render, render)
    clock.now = 2.0
    assert cache.get_or_render("alice", "r1", render, render) == b"doc2"
    assert background == []


def test_invalidate_drops_every_owner_s_entry(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background)
    render = Renderer(files=100)
    cache.get_or_render("alice", "r1", render, render)
    cache.get_or_render("alice", "r2", render, render)
    cache.invalidate("r1")
    assert cache.get_or_render("alice", "r1", render, render) == b"doc3"
    assert cache.get_or_render("alice", "r2", render, render) == b"doc2"


def test_a_refresh_that_lost_a_race_with_invalidate_is_not_kept(
    clock: Clock, background: list[Callable[[], None]]
) -> None:
    cache = _cache(clock, background)
    here, apart = Renderer(files=100), Renderer(files=100)
    cache.get_or_render("alice", "r1", here, apart)
    clock.now = 1.5
    cache.get_or_render("alice", "r1", here, apart)
    cache.invalidate("r1")  # a cancel committed while the refresh was running
    background.pop()()
    assert cache.get_or_render("alice", "r1", here, apart) == b"doc2"  # rendered fresh here


def test_a_failed_refresh_drops_the_entry(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background)
    here, apart = Renderer(files=100), Renderer(files=100)
    cache.get_or_render("alice", "r1", here, apart)
    clock.now = 1.5
    cache.get_or_render("alice", "r1", here, apart)
    apart.fail = True
    background.pop()()
    assert cache.get_or_render("alice", "r1", here, apart) == b"doc2"


def test_zero_ttl_disables(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = _cache(clock, background, ttl=0)
    render = Renderer(files=10_000)
    cache.get_or_render("alice", "r1", render, render)
    cache.get_or_render("alice", "r1", render, render)
    assert render.calls == 2


def test_entries_are_bounded(clock: Clock, background: list[Callable[[], None]]) -> None:
    cache = StatusCache(
        ttl_s=1.0, min_files=1, max_entries=2, monotonic=clock, run_in_background=background.append
    )
    render = Renderer(files=1)
    for request_id in ("r1", "r2", "r3"):
        clock.now += 0.1
        cache.get_or_render("alice", request_id, render, render)
    assert cache.get_or_render("alice", "r1", render, render) == b"doc4"  # the oldest went
    assert cache.get_or_render("alice", "r3", render, render) == b"doc3"


def test_an_entry_of_another_version_is_never_answered(
    clock: Clock, background: list[Callable[[], None]]
) -> None:
    """The version is what another process's cancel or delete changes: its own invalidation cannot reach
    this process's entries, the version read on every call does."""
    cache = _cache(clock, background)
    here, apart = Renderer(files=100), Renderer(files=100, name="apart")
    assert cache.get_or_render("alice", "r1", here, apart, version=1) == b"doc1"
    assert cache.get_or_render("alice", "r1", here, apart, version=1) == b"doc1"
    assert cache.get_or_render("alice", "r1", here, apart, version=2) == b"doc2"  # fresh, at once
    clock.now = 1.5  # stale: answered while refreshing, but only at its own version
    assert cache.get_or_render("alice", "r1", here, apart, version=2) == b"doc2"
    assert cache.get_or_render("alice", "r1", here, apart, version=3) == b"doc3"
    background.pop()()  # the refresh of the version-2 entry, which version 3 replaced: dropped
    assert cache.get_or_render("alice", "r1", here, apart, version=3) == b"doc3"
    assert apart.calls == 1
