"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 (port 0) in a thread, answering each POST
with the next scripted answer (200 once the script is used up) and keeping what it was sent."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


@dataclass(frozen=True)
class Answer:
    status: int
    headers: tuple[tuple[str, str], ...] = ()


class Receiver:
    def __init__(
        self, answers: Sequence[int | Answer] = (), on_request: Callable[[Received], None] | None = None
    ):
        self._answers = [a if isinstance(a, Answer) else Answer(a) for a in answers]
        self._on_request = on_request
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                got = Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
                )
                answer = receiver._record(got)
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def _record(self, got: Received) -> Answer:
        with self._lock:
            self.received.append(got)
            answer = self._answers.pop(0) if self._answers else Answer(200)
        if self._on_request is not None:
            self._on_request(got)
        return answer

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextmanager
def receiving(
    answers: Sequence[int | Answer] = (), on_request: Callable[[Received], None] | None = None
) -> Iterator[Receiver]:
    receiver = Receiver(answers, on_request).start()
    try:
        yield receiver
    finally:
        receiver.stop()


def closed_port_url() -> str:
    """A loopback URL nobody listens on (a port bound, then let go)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"
