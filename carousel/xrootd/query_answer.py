"""The answer to `xrdfs query prepare`: XRootD hands the program's standard output to the client verbatim.

One line per item, fields separated by a tab, the first field a word in capitals saying what the line is:

    REQUEST  <name>  <ACTIVE|DONE>  id=<carousel id>  files=<n>  SUBMITTED=<n>  STARTED=<n>  COMPLETED=<n>
             FAILED=<n>  CANCELLED=<n>
    OUTLOOK  position=<n|->  eta=<ISO 8601|->  rough=<yes|no>  waiting=<code>:<files>,...   (active only)
    <STATE>  <path>  [<detail>]        one per file: SUBMITTED, STARTED, COMPLETED, FAILED or CANCELLED
    UNKNOWN  <path>  not in this request
    MORE     <text>                    files left out to keep the answer within its size
    ERROR    <text>                    no answer about the request (unknown id, service unreachable, ...)

A FAILED file's detail is the reason; a COMPLETED file whose disk copy was released says so. Paths and
details never hold a tab or a line break. The answer stays within a byte budget (XRootD 5.5.3 cuts
answers at about 2 KB): when the files do not all fit, the most telling ones come first (unknown and
failed, cancelled, started, waiting, then completed) and a MORE line counts the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from carousel.domain.states import TapeRestState
from carousel.xrootd.service import FileState, Outlook, RequestState

RELEASED = "not on disk (released)"
NOT_IN_REQUEST = "not in this request"
# Which files to show first when not all fit.
_SHOWN_FIRST = {
    "UNKNOWN": 0,
    TapeRestState.FAILED.value: 0,
    TapeRestState.CANCELLED.value: 1,
    TapeRestState.STARTED.value: 2,
    TapeRestState.SUBMITTED.value: 3,
    TapeRestState.COMPLETED.value: 4,
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def clean(text: str) -> str:
    """Text safe in one field: control characters (tabs, line breaks) become one space."""
    return _CONTROL.sub(" ", text).strip()


def request_line(name: str, request: RequestState) -> str:
    counts = "\t".join(f"{state.value}={request.counts.get(state.value, 0)}" for state in TapeRestState)
    return "\t".join(
        [
            "REQUEST",
            clean(name),
            request.state,
            f"id={request.request_id}",
            f"files={request.files_total}",
            counts,
        ]
    )


def outlook_line(outlook: Outlook) -> str:
    """Where an active request stands: files read before its first, when its last is expected on disk,
    and why its files wait (reason codes with their files; docs/api.md). A code given by several libraries
    of a site is one entry, its files added up, where it first came (most files first)."""
    by_code: dict[str, int] = {}
    for code, files in outlook.waiting:
        by_code[code] = by_code.get(code, 0) + files
    waiting = ",".join(f"{clean(code)}:{files}" for code, files in by_code.items())
    return "\t".join(
        [
            "OUTLOOK",
            f"position={'-' if outlook.position is None else outlook.position}",
            f"eta={clean(outlook.eta) if outlook.eta else '-'}",
            f"rough={'yes' if outlook.rough else 'no'}",
            f"waiting={waiting or '-'}",
        ]
    )


def file_line(entry: FileState) -> str:
    fields = [clean(entry.state), clean(entry.path)]
    if entry.state == TapeRestState.FAILED.value:
        fields.append(clean(entry.error or "") or "failed")
    elif entry.state == TapeRestState.COMPLETED.value and not entry.on_disk:
        fields.append(RELEASED)
    return "\t".join(fields)


def unknown_line(path: str) -> str:
    return f"UNKNOWN\t{clean(path)}\t{NOT_IN_REQUEST}"


def error_line(message: str) -> str:
    return f"ERROR\t{clean(message)}"


def _more_line(left_out: int, budget: int) -> str:
    return (
        f"MORE\t{left_out} more file(s) not shown: the answer is limited to {budget} bytes; "
        "query with paths to see them"
    )


def _size(line: str) -> int:
    return len(line.encode("utf-8", "surrogateescape")) + 1  # and its line break


def answer(head: str, lines: Sequence[tuple[str, str]], *, budget: int) -> str:
    """The head line, then `lines` ((state, line) pairs, in the request's order) as they fit in `budget`
    bytes; the text ends with a line break."""
    every = [head, *(line for _, line in lines)]
    if sum(_size(line) for line in every) <= budget:
        return "\n".join(every) + "\n"
    ranked = sorted(lines, key=lambda pair: _SHOWN_FIRST.get(pair[0], len(_SHOWN_FIRST)))
    reserve = _size(_more_line(len(lines), budget))
    shown = [head]
    used = _size(head)
    for _, line in ranked:
        if used + _size(line) + reserve > budget:
            break
        shown.append(line)
        used += _size(line)
    shown.append(_more_line(len(lines) - (len(shown) - 1), budget))
    return "\n".join(shown) + "\n"


def request_answer(
    name: str,
    request: RequestState,
    files: Iterable[FileState],
    *,
    asked: Sequence[str] = (),
    budget: int,
) -> str:
    """The answer about one request: every file, or only the `asked` paths in the order asked (those not
    in the request as UNKNOWN). Asked paths are matched after the service's normalisation."""
    head = request_line(name, request)
    if request.outlook is not None:  # the head's two lines count against the budget together
        head += "\n" + outlook_line(request.outlook)
    if not asked:
        return answer(head, [(f.state, file_line(f)) for f in files], budget=budget)
    wanted = {normalise(path) for path in asked}
    found = {f.path: f for f in files if f.path in wanted}
    lines: list[tuple[str, str]] = []
    for path in dict.fromkeys(asked):
        entry = found.get(normalise(path))
        lines.append(
            (entry.state, file_line(entry)) if entry is not None else ("UNKNOWN", unknown_line(path))
        )
    return answer(head, lines, budget=budget)


def error_answer(message: str) -> str:
    return error_line(message) + "\n"


_SLASHES = re.compile(r"//+")


def normalise(path: str) -> str:
    """A path as the service keys it: duplicate slashes collapsed, '.' segments and a trailing slash
    dropped (XRootD refuses '..' before the program sees a path)."""
    segments = [s for s in _SLASHES.sub("/", path).split("/") if s not in ("", ".")]
    return "/" + "/".join(segments)
