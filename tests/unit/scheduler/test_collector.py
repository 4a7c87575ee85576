"""The collector is held off inside the block, nested blocks included, and restored as it was after."""

from __future__ import annotations

import gc

import pytest

from carousel.scheduler.collector import collector_held


def test_held_off_inside_nested_blocks_and_restored_after() -> None:
    assert gc.isenabled()
    with collector_held():
        assert not gc.isenabled()
        with collector_held():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()


def test_restored_when_the_block_raises_and_left_off_if_it_was_off() -> None:
    with pytest.raises(RuntimeError), collector_held():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_held():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
