"""Files the library may have lost are handed to it again, under the batch key they were submitted with.

Why. The simulated library lives in the scheduler's memory: a restarted scheduler (or another instance that
takes the leader lock over) has a library that never heard of the files SUBMITTED to the old one, and they
would wait forever. A real HSM may lose requests too (a restart of its own, a dropped queue).

When. At the start of each leadership term (this process started leading, took the lock over from another
instance, or got it back after losing its connection): every SUBMITTED file someone still waits for. While
the term lasts, every `timeout_s / 10`: batches with a file that has had no news (not handed over, not
started) for `timeout_s`, each at most once per `timeout_s`.

Never twice by the same library instance. A file goes back only under the batch key it was submitted with,
and an adapter takes a batch key once (the HsmAdapter contract: submit is idempotent by key). Where the
library still holds the batch, or has read it, the new submission is a no-op; where it lost it, or never had
it (a new process, another instance), the files are read. A file gets a new batch key only after the library
let it go (its failure or cancel event, its "unknown" answer to a cancel) or when its claim never reached the
library, never while an instance may still hold it (carousel.scheduler.resilient_store keeps hand-overs
whose record failed until they are recorded).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.engine import run_transaction
from carousel.db.inflight_queries import SubmittedFile, submitted_batch_keys, submitted_files_of
from carousel.domain.clock import Clock
from carousel.scheduler.planning_path import batch_file
from hsm_adapters.base import Batch, HsmAdapter

log = structlog.get_logger(__name__)

PAGE_BATCHES = 1_000


@dataclass(slots=True)
class Resubmission:
    batches: int = 0
    files: int = 0
    errors: list[str] = field(default_factory=list)


class InFlightWatch:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        adapter: HsmAdapter,
        clock: Clock,
        *,
        timeout_s: float,
        destination: Callable[[str], str] | None = None,
        library: str | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.session_factory = session_factory
        self.adapter = adapter
        self.library = library  # whose files the adapter holds (docs/decisions.md §17); None: every file
        self.clock = clock
        self.destination = destination  # where each file's bytes go (the disk buffer); None: no bytes
        self.timeout = timedelta(seconds=timeout_s)
        self.check_every = self.timeout / 10
        self._everything_due = True  # a term starts with the first cycle
        self._next_check: datetime | None = None
        self._resent: dict[str, datetime] = {}  # batch key -> last hand-over again in this term

    def new_term(self) -> None:
        """This instance has just become the leader: whatever is in flight may be unknown to its library."""
        self._everything_due = True
        self._resent.clear()

    def run(self) -> Resubmission:
        """Hands over again what is due (nothing most cycles). Call only while the library is online."""
        now = self.clock.now()
        result = Resubmission()
        if self._everything_due:
            silent_since = None
        elif self._next_check is not None and now < self._next_check:
            return result
        else:
            silent_since = now - self.timeout
        self._resent = {key: at for key, at in self._resent.items() if at > now - self.timeout}

        after: str | None = None
        while True:
            keys, files = run_transaction(
                self.session_factory,
                functools.partial(_page, silent_since=silent_since, after=after, library=self.library),
            )
            for batch in _batches(files, self.destination):
                if silent_since is not None and batch.key in self._resent:
                    continue
                try:
                    self.adapter.submit(batch)
                except Exception as exc:
                    result.errors.append(f"submit again {batch.key}: {exc}")
                    continue
                self._resent[batch.key] = now
                result.batches += 1
                result.files += len(batch.files)
            if len(keys) < PAGE_BATCHES:
                break
            after = keys[-1]

        if result.files:
            why = "a new leadership term" if silent_since is None else f"no news for {self.timeout}"
            log.warning(
                "files handed to the library again", files=result.files, batches=result.batches, why=why
            )
        if not result.errors:  # else the same again next cycle (what went through is a no-op then)
            self._everything_due = False
            self._next_check = now + self.check_every
        return result


def _page(
    session: Session, *, silent_since: datetime | None, after: str | None, library: str | None
) -> tuple[list[str], list[SubmittedFile]]:
    keys = submitted_batch_keys(
        session, silent_since=silent_since, after=after, limit=PAGE_BATCHES, library=library
    )
    return keys, submitted_files_of(session, keys, library)


def _batches(files: list[SubmittedFile], destination: Callable[[str], str] | None) -> list[Batch]:
    by_key: dict[str, list[SubmittedFile]] = {}
    for file in files:
        by_key.setdefault(file.batch_key, []).append(file)
    return [
        Batch(
            key=key,
            tape=members[0].tape,
            files=tuple(
                batch_file(f.id, f.path, f.position_bytes, f.size_bytes, destination) for f in members
            ),
            service_class=members[0].service_class,
        )
        for key, members in by_key.items()
    ]
