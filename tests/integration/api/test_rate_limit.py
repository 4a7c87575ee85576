"""Token buckets per caller and per group, in the database (both backends), in virtual time."""

from __future__ import annotations

import socket

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.rate_limit import PRUNE_EVERY, Rate, RateLimiter
from carousel.db.engine import make_engine, make_session_factory
from carousel.db.models import RateBucket
from carousel.db.transient_errors import RETRY_AFTER_S
from carousel.domain.callers import Caller
from carousel.domain.clock import ManualClock
from carousel.domain.errors import TooManyRequests, Unavailable

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


def test_a_burst_then_the_sustained_rate(clock: ManualClock, session_factory: sessionmaker[Session]) -> None:
    limiter = RateLimiter(caller=Rate(2.0, 5), group=None, clock=clock, session_factory=session_factory)
    assert admitted(limiter, ALICE, 20) == 5
    with pytest.raises(TooManyRequests) as refused:
        limiter.charge(ALICE)
    assert refused.value.retry_after_s == 1  # half a second to the next token, rounded up
    clock.advance(10)
    assert admitted(limiter, ALICE, 100) == 5  # the bucket refills to its capacity, no more
    clock.advance(1.5)
    assert admitted(limiter, ALICE, 100) == 3


def test_callers_have_buckets_of_their_own(
    clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    limiter = RateLimiter(caller=Rate(1.0, 2), group=None, clock=clock, session_factory=session_factory)
    assert admitted(limiter, ALICE, 10) == 2
    assert admitted(limiter, BOB, 10) == 2


def test_a_group_bucket_is_shared_and_a_refusal_takes_nothing(
    clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    limiter = RateLimiter(
        caller=Rate(1.0, 3), group=Rate(1.0, 4), clock=clock, session_factory=session_factory
    )
    assert admitted(limiter, ALICE, 3) == 3
    assert admitted(limiter, BOB, 10) == 1  # the group's fourth token, then the group is empty
    with pytest.raises(TooManyRequests, match="group"):
        limiter.charge(BOB)
    assert admitted(limiter, CAROL, 3) == 3  # another group is untouched
    clock.advance(2)
    assert admitted(limiter, BOB, 10) == 2  # BOB still had two caller tokens: nothing taken on refusal


def test_retry_after_is_the_wait_for_the_slowest_bucket(
    clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    limiter = RateLimiter(caller=Rate(0.1, 1), group=None, clock=clock, session_factory=session_factory)
    limiter.charge(ALICE)
    with pytest.raises(TooManyRequests) as refused:
        limiter.charge(ALICE)
    assert refused.value.retry_after_s == 10
    clock.advance(9.9)
    with pytest.raises(TooManyRequests):
        limiter.charge(ALICE)
    clock.advance(0.1)
    limiter.charge(ALICE)


def test_two_limiters_on_one_database_share_the_buckets(
    clock: ManualClock, session_factory: sessionmaker[Session]
) -> None:
    """What two API processes are: each its own limiter, one database."""
    first = RateLimiter(caller=Rate(1.0, 4), group=None, clock=clock, session_factory=session_factory)
    second = RateLimiter(caller=Rate(1.0, 4), group=None, clock=clock, session_factory=session_factory)
    assert admitted(first, ALICE, 2) == 2
    assert admitted(second, ALICE, 10) == 2  # the rest of the one bucket, not a bucket of its own
    with pytest.raises(TooManyRequests):
        first.charge(ALICE)


def test_buckets_full_again_are_forgotten(clock: ManualClock, session_factory: sessionmaker[Session]) -> None:
    limiter = RateLimiter(caller=Rate(1.0, 2), group=None, clock=clock, session_factory=session_factory)
    limiter.charge(Caller("idle"))
    clock.advance(3)  # "idle" is full again: its row says nothing a missing row does not
    for index in range(PRUNE_EVERY - 1):
        limiter.charge(Caller(f"busy-{index}"))
    with session_factory() as session:
        keys = set(session.scalars(select(RateBucket.key)))
        assert "caller:idle" not in keys
        assert session.scalar(select(func.count()).select_from(RateBucket)) == PRUNE_EVERY - 1


def test_off_when_no_rate_is_set(clock: ManualClock, session_factory: sessionmaker[Session]) -> None:
    limiter = RateLimiter(caller=None, group=None, clock=clock, session_factory=session_factory)
    assert admitted(limiter, ALICE, 1000) == 1000


def test_a_database_that_does_not_answer_is_unavailable_with_retry_after(clock: ManualClock) -> None:
    """Charged before the body is read, outside the routes' database error handling: still a 503."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nobody listens there once the socket is closed
    engine = make_engine(
        f"postgresql+psycopg://nobody@127.0.0.1:{port}/none", connect_args={"connect_timeout": 5}
    )
    try:
        limiter = RateLimiter(
            caller=Rate(1.0, 2), group=None, clock=clock, session_factory=make_session_factory(engine)
        )
        with pytest.raises(Unavailable) as refused:
            limiter.charge(ALICE)
        assert refused.value.retry_after_s == RETRY_AFTER_S
    finally:
        engine.dispose()
