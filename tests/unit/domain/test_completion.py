"""The completion rule (carousel.domain.completion): what each end of a read does to its file, the rule both
the service's completion and the replay's memory store follow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.completion import (
    NO_REASON,
    Completion,
    Counted,
    FileNow,
    ReadEnd,
    RetryRule,
    holds_attempt,
    read_ended,
)
from carousel.domain.states import (
    CANCEL_READ,
    FAIL_READ,
    FILE_IN_FLIGHT,
    FILE_TRANSITIONS,
    REQUEUE,
    STAGE,
    FileState,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RULE = RetryRule(max_attempts=3, backoff_s=600)
ENDS = (FileState.STAGED, FileState.FAILED, FileState.CANCELLED)


def submitted(attempts: int = 0, *, wanted: bool = True, batch: str = "b1") -> FileNow:
    return FileNow(id=1, state=FileState.SUBMITTED, batch_key=batch, attempts=attempts, wanted=wanted)


def ended(outcome: FileState, *, batch: str | None = "b1", retryable: bool = True, reason: str | None = None):
    return ReadEnd(outcome, T0, batch, retryable=retryable, reason=reason)


# --- the rule, case by case --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "end", "expected"),
    [
        # on disk: staged, whichever batch read it
        (submitted(1), ended(FileState.STAGED), Completion(Counted.STAGED, STAGE, 1)),
        (submitted(), ended(FileState.STAGED, batch="old"), Completion(Counted.STAGED, STAGE, 0)),
        # a failed read with attempts left: queued again after the backoff, the reason kept
        (
            submitted(0),
            ended(FileState.FAILED, reason="drive error"),
            Completion(Counted.RETRIED, REQUEUE, 1, T0 + timedelta(seconds=600), "drive error"),
        ),
        (
            submitted(1),
            ended(FileState.FAILED),
            Completion(Counted.RETRIED, REQUEUE, 2, T0 + timedelta(seconds=600), NO_REASON),
        ),
        # the last attempt: failed for good, saying so
        (
            submitted(2),
            ended(FileState.FAILED, reason="drive error"),
            Completion(Counted.FAILED, FAIL_READ, 3, None, "drive error (gave up after 3 attempts)"),
        ),
        # not retryable: failed at once, the attempt counted, no "gave up"
        (
            submitted(0),
            ended(FileState.FAILED, retryable=False, reason="not on this tape"),
            Completion(Counted.FAILED, FAIL_READ, 1, None, "not on this tape"),
        ),
        # nobody waits any more: a failure is final
        (
            submitted(0, wanted=False),
            ended(FileState.FAILED, reason="drive error"),
            Completion(Counted.FAILED, FAIL_READ, 1, None, "drive error"),
        ),
        # cancelled by the HSM while wanted: queued again at once, no attempt counted
        (
            submitted(1),
            ended(FileState.CANCELLED, reason="drive taken"),
            Completion(Counted.REQUEUED, REQUEUE, 1, None, "drive taken"),
        ),
        (submitted(1), ended(FileState.CANCELLED), Completion(Counted.REQUEUED, REQUEUE, 1, None, None)),
        # cancelled and unwanted: cancelled
        (
            submitted(1, wanted=False),
            ended(FileState.CANCELLED),
            Completion(Counted.CANCELLED, CANCEL_READ, 1, None, "cancelled"),
        ),
        # about a batch the file has left: nothing
        (submitted(), ended(FileState.FAILED, batch="old"), Completion(Counted.STALE, None, 0)),
        (submitted(), ended(FileState.CANCELLED, batch="old"), Completion(Counted.STALE, None, 0)),
        # no batch named: the present one
        (submitted(), ended(FileState.CANCELLED, batch=None), Completion(Counted.REQUEUED, REQUEUE, 0)),
    ],
)
def test_each_end_of_a_read(file: FileNow, end: ReadEnd, expected: Completion) -> None:
    assert read_ended(file, end, RULE) == expected


@pytest.mark.parametrize("state", [s for s in FileState if s not in FILE_IN_FLIGHT])
@pytest.mark.parametrize("outcome", ENDS)
def test_an_end_about_a_file_not_in_flight_changes_nothing(state: FileState, outcome: FileState) -> None:
    file = FileNow(id=1, state=state, batch_key=None, attempts=1, wanted=True)
    assert read_ended(file, ended(outcome, batch=None), RULE) == Completion(Counted.STALE, None, 1)


def test_a_claimed_file_ends_as_a_submitted_one() -> None:
    claimed = FileNow(id=1, state=FileState.CLAIMED, batch_key="b1", attempts=0, wanted=True)
    assert read_ended(claimed, ended(FileState.STAGED), RULE).move is STAGE
    assert read_ended(claimed, ended(FileState.FAILED), RULE).move is REQUEUE


def test_only_an_end_is_judged() -> None:
    with pytest.raises(ValueError, match="QUEUED"):
        read_ended(submitted(), ended(FileState.QUEUED), RULE)


# --- invariants over any file, event and rule --------------------------------------------------------------

files = st.builds(
    FileNow,
    id=st.just(1),
    state=st.sampled_from(FileState),
    batch_key=st.sampled_from([None, "b1", "b2"]),
    attempts=st.integers(0, 6),
    wanted=st.booleans(),
)
ends = st.builds(
    ReadEnd,
    outcome=st.sampled_from(ENDS),
    at=st.integers(0, 10**6).map(lambda s: T0 + timedelta(seconds=s)),
    batch_key=st.sampled_from([None, "b1", "b2"]),
    retryable=st.booleans(),
    reason=st.sampled_from([None, "", "drive error"]),
)
rules = st.builds(RetryRule, max_attempts=st.integers(1, 5), backoff_s=st.sampled_from([0.0, 60.0, 600.0]))


@given(files, ends, rules)
def test_every_change_is_one_the_transition_table_allows(
    file: FileNow, end: ReadEnd, rule: RetryRule
) -> None:
    completion = read_ended(file, end, rule)
    if completion.move is None:
        assert completion == Completion(Counted.STALE, None, file.attempts)
        return
    assert file.state in completion.move.sources
    assert completion.move.target in FILE_TRANSITIONS[file.state]
    assert completion.state is completion.move.target


@given(files, ends, rules)
def test_only_a_failed_read_counts_an_attempt(file: FileNow, end: ReadEnd, rule: RetryRule) -> None:
    completion = read_ended(file, end, rule)
    counted_one = completion.counted in (Counted.RETRIED, Counted.FAILED)
    assert counted_one == (end.outcome is FileState.FAILED and completion.move is not None)
    assert completion.attempts == file.attempts + (1 if counted_one else 0)


@given(files, ends, rules)
def test_a_retry_waits_the_backoff_and_stays_within_the_attempts(
    file: FileNow, end: ReadEnd, rule: RetryRule
) -> None:
    completion = read_ended(file, end, rule)
    if completion.counted is Counted.RETRIED:
        assert end.retryable and file.wanted and completion.attempts < rule.max_attempts
        assert completion.not_before == end.at + timedelta(seconds=rule.backoff_s)
    else:
        assert completion.not_before is None
    if completion.counted is Counted.FAILED:
        gave_up = "gave up after" in (completion.error or "")
        assert gave_up == (end.retryable and completion.attempts >= rule.max_attempts)
        assert completion.error and completion.error.startswith(end.reason or NO_REASON)


@given(files, ends, rules)
def test_a_file_someone_waits_for_is_never_cancelled_and_ends_only_by_staging_or_failing(
    file: FileNow, end: ReadEnd, rule: RetryRule
) -> None:
    completion = read_ended(file, end, rule)
    if file.wanted:
        assert completion.counted is not Counted.CANCELLED
    else:
        assert completion.counted not in (Counted.RETRIED, Counted.REQUEUED)


@given(files, st.sampled_from([None, "b1", "b2"]))
def test_an_event_holds_the_attempt_of_an_in_flight_file_of_its_batch(
    file: FileNow, batch_key: str | None
) -> None:
    expected = file.state in FILE_IN_FLIGHT and batch_key in (None, file.batch_key)
    assert holds_attempt(file, batch_key) is expected
