"""Structured logs, configured once where a process starts (`configure_logging(settings)`).

Every record, whether written through structlog or the standard library (uvicorn, SQLAlchemy, our own
`logging.getLogger` users), goes through one handler on the root logger and comes out either as one JSON
object a line (`log_format = "json"`, for production: what log collectors parse) or as coloured text for
people (`"console"`, the default). Values bound with `structlog.contextvars` (the request id of an HTTP
request, the cycle id of a scheduling cycle) appear on every record written while they are bound, from
any logger.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog
from structlog.typing import Processor

LogFormat = Literal["console", "json"]
QUIET = ("alembic", "apscheduler")

# Processors shared by structlog's own records and the standard library's.
_SHARED: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.stdlib.ExtraAdder(),
]


def _renderer(log_format: LogFormat, stream: TextIO) -> Processor:
    if log_format == "json":
        return structlog.processors.JSONRenderer()
    if stream.isatty():
        return structlog.dev.ConsoleRenderer(colors=True)
    # Into a file or a pipe: rich's tracebacks would wrap at 80 columns and split paths and URLs.
    return structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)


def configure_logging(log_format: LogFormat, level: str = "INFO", stream: TextIO | None = None) -> None:
    """Route every log record through structlog to `stream` (standard error by default), rendered as JSON or
    for the console. Calling it again replaces the previous configuration (the last call wins)."""
    out = stream if stream is not None else sys.stderr
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    structlog.configure(
        processors=[
            *_SHARED,
            structlog.stdlib.filter_by_level,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,  # a later configure_logging reaches loggers already used
    )
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if log_format == "json":
        final.append(structlog.processors.dict_tracebacks)
    final.append(_renderer(log_format, out))
    formatter = structlog.stdlib.ProcessorFormatter(foreign_pre_chain=_SHARED, processors=final)
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    # libraries that narrate their routine work at INFO (a migration check at every start) say only problems
    for name in QUIET:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    # uvicorn's loggers keep handlers of their own; let their records reach ours instead
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
