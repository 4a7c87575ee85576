"""Token buckets per caller and per group, in virtual time."""

from __future__ import annotations

import pytest

from carousel.api.rate_limit import Rate, RateLimiter
from carousel.domain.callers import Caller
from carousel.domain.clock import ManualClock
from carousel.domain.errors import TooManyRequests

ALICE = Caller("alice", ("/star",))
BOB = Caller("bob", ("/star",))
CAROL = Caller("carol", ("/atlas",))


def admitted(limiter: RateLimiter, caller: Caller, calls: int) -> int:
    count = 0
    for _ in range(calls):
        try:
            limiter.charge(caller)
        except TooManyRequests:
            continue
        count += 1
    return count


def test_a_burst_then_the_sustained_rate(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=Rate(2.0, 5), group=None, clock=clock)
    assert admitted(limiter, ALICE, 20) == 5
    with pytest.raises(TooManyRequests) as refused:
        limiter.charge(ALICE)
    assert refused.value.retry_after_s == 1  # half a second to the next token, rounded up
    clock.advance(10)
    assert admitted(limiter, ALICE, 100) == 5  # the bucket refills to its capacity, no more
    clock.advance(1.5)
    assert admitted(limiter, ALICE, 100) == 3


def test_callers_have_buckets_of_their_own(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=Rate(1.0, 2), group=None, clock=clock)
    assert admitted(limiter, ALICE, 10) == 2
    assert admitted(limiter, BOB, 10) == 2


def test_a_group_bucket_is_shared_and_a_refusal_takes_nothing(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=Rate(1.0, 3), group=Rate(1.0, 4), clock=clock)
    assert admitted(limiter, ALICE, 3) == 3
    assert admitted(limiter, BOB, 10) == 1  # the group's fourth token, then the group is empty
    with pytest.raises(TooManyRequests, match="group"):
        limiter.charge(BOB)
    assert admitted(limiter, CAROL, 3) == 3  # another group is untouched
    clock.advance(2)
    assert admitted(limiter, BOB, 10) == 2  # BOB still had two caller tokens: nothing taken on refusal


def test_retry_after_is_the_wait_for_the_slowest_bucket(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=Rate(0.1, 1), group=None, clock=clock)
    limiter.charge(ALICE)
    with pytest.raises(TooManyRequests) as refused:
        limiter.charge(ALICE)
    assert refused.value.retry_after_s == 10
    clock.advance(9.9)
    with pytest.raises(TooManyRequests):
        limiter.charge(ALICE)
    clock.advance(0.1)
    limiter.charge(ALICE)


def test_forgotten_keys_start_full_and_memory_stays_bounded(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=Rate(1.0, 1), group=None, clock=clock, max_keys=2)
    for name in ("a", "b", "c"):
        limiter.charge(Caller(name))
    limiter.charge(Caller("a"))  # "a" was forgotten, so it starts again with a full bucket
    with pytest.raises(TooManyRequests):
        limiter.charge(Caller("c"))


def test_off_when_no_rate_is_set(clock: ManualClock) -> None:
    limiter = RateLimiter(caller=None, group=None, clock=clock)
    assert admitted(limiter, ALICE, 1000) == 1000
