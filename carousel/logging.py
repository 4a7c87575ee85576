"""Structured logs, configured once where a process starts (`configure_logging(settings)`).

Every record, whether written through structlog or the standard library (uvicorn, SQLAlchemy, our own
`logging.getLogger` users), goes through one handler on the root logger and comes out either as one JSON
object a line (`log_format = "json"`, for production: what log collectors parse) or as coloured text for
people (`"console"`, the default). Values bound with `structlog.contextvars` (the request id of an HTTP
request, the cycle id of a scheduling cycle) appear on every record written while they are bound, from
any logger.

Secrets never reach a log (docs/security.md): tracebacks are written without their frames' local variables
(which held the request's headers, and cost about 256 KB and seconds of a stalled process per error), values
under secret-looking keys are replaced, and the rendered line is scrubbed of bearer tokens, JWTs and
Authorization or Cookie values, whatever wrote them.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor, WrappedLogger

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


REDACTED = "[redacted]"
# Keys whose values are secrets wherever they appear in a record (header names, settings, extra fields).
_SECRET_KEY = re.compile(r"authorization|cookie|token|secret|password|passwd|api[-_]?key", re.IGNORECASE)
_SECRET_TEXT = (
    # "Bearer <token>" (an Authorization value, or a client's error message quoting one)
    # (8 characters at least: real tokens are long, and prose such as "a bearer token" stays as it is)
    (re.compile(r"(?i)\b(bearer)(\s+|%20)[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    # a JWT anywhere: three base64url parts, the first a JSON object ("eyJ")
    (re.compile(r"eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"), REDACTED),
    # a token in a URL's query (an access log, an error quoting a URL)
    (re.compile(r"(?i)\b((?:access_|id_|refresh_)?token=)[^&\s'\"]+"), r"\1" + REDACTED),
    # a header written as "name: value", "name=value" or ('name', 'value'); not the word in prose
    (
        re.compile(
            r"(?i)\b(proxy-authorization|authorization|set-cookie|cookie|x-api-key)"
            r"(['\"]?\s*[:=]\s*b?['\"]?|['\"],\s*b?['\"])(?!\[redacted\])[^'\"\r\n]+"
        ),
        r"\1\2" + REDACTED,
    ),
)


def redact_text(text: str) -> str:
    """The text with every bearer token, JWT and Authorization or Cookie value replaced."""
    for pattern, replacement in _SECRET_TEXT:
        text = pattern.sub(replacement, text)
    return text


def _redact_value(key: object, value: Any) -> Any:
    if isinstance(key, str) and _SECRET_KEY.search(key) and value is not None:
        return REDACTED
    if isinstance(value, Mapping):
        return {k: _redact_value(k, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(None, v) for v in value]
    return value


def redact_secret_keys(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """Values under secret-looking keys replaced (an extra field named `authorization`, say)."""
    return {key: _redact_value(key, value) for key, value in event_dict.items()}


def _scrubbed(renderer: Processor) -> Processor:
    """The renderer, with its output (message, fields, traceback and all) scrubbed of secrets."""

    def render(logger: WrappedLogger, method: str, event_dict: EventDict) -> Any:
        rendered = renderer(logger, method, event_dict)
        return redact_text(rendered) if isinstance(rendered, str) else rendered

    return render


def _renderer(log_format: LogFormat, stream: TextIO) -> Processor:
    if log_format == "json":
        return structlog.processors.JSONRenderer()
    # Python's own traceback: no local variables (they hold requests, headers and settings), cheap to write
    # (rich's, with code around each of some forty frames, took a third of a second per error), and never
    # wrapped at 80 columns into a file or a pipe (rich's would split paths and URLs)
    return structlog.dev.ConsoleRenderer(
        colors=stream.isatty(), exception_formatter=structlog.dev.plain_traceback
    )


class _StandardError(logging.StreamHandler[TextIO]):
    """Writes to standard error as it is when a record comes, as logging's own last resort does: a caller that
    replaced sys.stderr for a while (a command run in-process with its output captured) and closed it after
    leaves no handler writing to a closed file for the threads that log on (a served app's)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:  # type: ignore[override]  # read at each record, never set
        return sys.stderr


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
        # the traceback as data, without its frames' local variables
        final.append(structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)))
    final.append(redact_secret_keys)
    final.append(_scrubbed(_renderer(log_format, out)))
    formatter = structlog.stdlib.ProcessorFormatter(foreign_pre_chain=_SHARED, processors=final)
    handler = logging.StreamHandler(stream) if stream is not None else _StandardError()
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
