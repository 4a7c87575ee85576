"""What `carousel serve`, `carousel api` and `carousel scheduler` say at start of files that wait for a
library the settings no longer name: each library's cycle reads its own files only, so they wait, unread and
unfailed, until an admin names the library again or their requests are cancelled (docs/operations.md, "A
library taken out of the settings"). One WARNING per such library in the log, and a line of the banner."""

from __future__ import annotations

from collections.abc import Collection

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.cli.outlook import files_word
from carousel.db.engine import transaction
from carousel.db.library_queries import StrandedWork, waiting_outside

log = structlog.get_logger(__name__)

WHAT_TO_DO = "name it again in the setting `libraries`, or cancel the requests of its files"


def stray_words(stray: StrandedWork) -> str:
    return (
        f"library {stray.library} is not in the settings, but {files_word(stray.files)}"
        f" {'waits' if stray.files == 1 else 'wait'} for it"
        f" ({stray.queued} queued, {stray.in_flight} in flight): no cycle reads them; {WHAT_TO_DO}"
    )


def stray_libraries(session_factory: sessionmaker[Session], named: Collection[str]) -> list[StrandedWork]:
    """The libraries outside `named` that files wait for, by name."""
    with transaction(session_factory) as session:
        return waiting_outside(session, named)


def warn_of_strays(session_factory: sessionmaker[Session], named: Collection[str]) -> list[str]:
    """Logs a WARNING per library outside `named` that files wait for; returns the banner's lines for them. A
    database that does not answer here is the start's own concern: a warning, and no lines."""
    try:
        strays = stray_libraries(session_factory, named)
    except SQLAlchemyError as exc:
        log.warning("could not count files of libraries not in the settings", error=str(exc))
        return []
    for stray in strays:
        log.warning(
            "files wait for a library the settings do not name",
            library=stray.library,
            queued=stray.queued,
            in_flight=stray.in_flight,
            what_to_do=WHAT_TO_DO,
        )
    return [f"warning: {stray_words(stray)}" for stray in strays]
