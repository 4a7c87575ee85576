"""A read that hangs (it starts and never ends) is cancelled at the HSM once it has run far longer than its
physics, and its attempt fails with "read timed out after N s": retried after the back-off on a later mount
within max_attempts, then failed with that reason; a read that hangs once succeeds on its retry."""

from __future__ import annotations

import itertools
from typing import Any

from sqlalchemy import select

from carousel.db.models import QueuedFileRow, Recall, RequestFile
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.scheduler.read_timeouts import read_limit_s
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import all_in, catalogue_files, make_cycle, run_until

SETTINGS: dict[str, Any] = {
    "max_attempts": 3,
    "retry_backoff_s": 100.0,
    "read_timeout_factor": 3.0,
    "read_timeout_margin_s": 120.0,
}


def run_with_a_hung_read(session_factory, make_adapter, clock: ManualClock, reads: int | None):
    probe = make_adapter()
    files = catalogue_files(probe, 12, clock.now())
    hung = files[5].path
    hang: dict[str, Any] = {"path": hung} if reads is None else {"path": hung, "reads": reads}
    adapter = make_adapter(faults={"hung_reads": [hang]})
    add_request(session_factory, files, clock.now())
    cycle = make_cycle(session_factory, adapter, clock, **SETTINGS)
    reports = run_until(cycle, clock, all_in(session_factory, FileState.STAGED, FileState.FAILED))
    with session_factory() as session:
        file = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == hung)).one()
        recalls = session.scalars(select(Recall).where(Recall.file_id == file.id).order_by(Recall.id)).all()
        link = session.scalars(select(RequestFile).where(RequestFile.file_id == file.id)).one()
        others = session.scalars(select(QueuedFileRow.state).where(QueuedFileRow.path != hung)).all()
    assert file.size_bytes is not None and cycle.path.costs is not None
    limit = read_limit_s(file.size_bytes, cycle.path.costs, 3.0, 120.0)
    return adapter, reports, file, list(recalls), link, others, limit


def test_a_read_that_always_hangs_is_cancelled_retried_on_later_mounts_then_fails_with_the_reason(
    session_factory, make_adapter, clock: ManualClock
):
    adapter, reports, file, recalls, link, others, limit = run_with_a_hung_read(
        session_factory, make_adapter, clock, reads=None
    )
    assert set(others) == {FileState.STAGED.value}  # the rest of the request is not held up
    assert file.state == FileState.FAILED.value and file.attempts == 3
    assert file.error is not None and file.error.startswith("read timed out after ")
    assert file.error.endswith("(gave up after 3 attempts)")
    assert link.state == "FAILED" and link.error == file.error  # the requester sees the reason

    assert len(recalls) == 3 and {r.outcome for r in recalls} == {FileState.FAILED.value}
    elapsed = []
    for recall in recalls:
        assert recall.reason is not None and recall.reason.startswith("read timed out after ")
        assert recall.started_at is not None and recall.finished_at is not None
        elapsed.append((recall.finished_at - recall.started_at).total_seconds())
        assert limit < elapsed[-1] <= limit + 20 + 12  # within a cycle step and a check interval
    # each retry waited for the back-off: a later mount, not the one the hang happened on
    for before, after in itertools.pairwise(recalls):
        assert before.finished_at is not None and after.submitted_at is not None
        assert (after.submitted_at - before.finished_at).total_seconds() >= 100.0
    # the cancel reached the library: each hung read was abandoned there, freeing its drive
    assert adapter.library.stats().files_cancelled == 3
    assert sum(r.read_timeouts for r in reports) == 3
    print(f"\nlimit {limit:.0f} s; hung reads ended after {[round(s) for s in elapsed]} s: {file.error}")


def test_a_read_that_hangs_once_is_read_on_its_retry(session_factory, make_adapter, clock: ManualClock):
    adapter, _, file, recalls, link, others, _ = run_with_a_hung_read(
        session_factory, make_adapter, clock, reads=1
    )
    assert set(others) == {FileState.STAGED.value}
    assert file.state == FileState.STAGED.value and file.attempts == 1
    assert [r.outcome for r in recalls] == [FileState.FAILED.value, FileState.STAGED.value]
    assert recalls[0].reason is not None and recalls[0].reason.startswith("read timed out after ")
    assert link.state == "COMPLETED"
    assert adapter.library.stats().files_cancelled == 1
