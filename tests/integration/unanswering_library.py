"""A real simulated library whose health (or capacity) call raises, as a library behind a broken link does:
every other call is the library's own."""

from __future__ import annotations

from typing import Any

from hsm_adapters.base import Capacity, Health
from hsm_adapters.simulated.adapter import SimulatedAdapter

NO_ANSWER = "the library does not answer"


class UnansweringLibrary:
    def __init__(self, inner: SimulatedAdapter, *, silent: tuple[str, ...] = ("health",)) -> None:
        self.inner = inner
        self.silent = silent
        self.asked: list[str] = []  # the silent calls made, in order

    def health(self) -> Health:
        return self._answer("health", self.inner.health)

    def capacity(self) -> Capacity:
        return self._answer("capacity", self.inner.capacity)

    def _answer(self, call: str, answer: Any) -> Any:
        if call in self.silent:
            self.asked.append(call)
            raise ConnectionError(NO_ANSWER)
        return answer()

    def __getattr__(self, name: str) -> Any:  # lookup, submit, events, cost figures: the library's own
        return getattr(self.inner, name)
