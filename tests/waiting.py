"""Waiting for something another thread does (a connector's state, a counter) without fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(probe: Callable[[], T], timeout: float = 10.0, what: str = "the condition") -> T:
    """The first truthy answer of ``probe()``, polled every 10 ms; fails the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s (last: {answer!r})")
        time.sleep(0.01)
