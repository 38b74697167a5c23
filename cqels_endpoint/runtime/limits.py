"""Bounds on what one continuous query may hold or compute (docs/ARCHITECTURE.md, "Limits").

``Limits`` is given to the ``Engine``; ``cqels serve`` fills it from ``--max-window-triples``,
``--max-tick-rows`` and ``--limit-action``.

- ``max_window_triples``: triples one window state (``runtime.windows``) may hold. With
  ``action="shed"`` a triple that arrives at a full window is not inserted (the *newest* is
  dropped: what the window holds stays a consistent past of the stream) and counted in the query's
  ``shed`` counter; with ``action="fail"`` the query fails.
- ``max_tick_rows``: deltas the operators of one incremental plan may emit in one evaluation (the
  increase of the sum of every operator's ``outputs`` counter, window buffers and caches flushing
  included), checked after each source has flushed. Exceeding it always fails the query: a derived
  row cannot be dropped without making Γ wrong, so there is nothing to shed.

A failed query stops (its state is released, its subscribers are told why); the others run on.

>>> Limits(max_window_triples=1000, action="shed").sheds
True
>>> Limits(action="drop")
Traceback (most recent call last):
...
ValueError: limit action 'drop': use fail or shed
"""

from __future__ import annotations

from dataclasses import dataclass

from cqels_endpoint.config import LIMIT_ACTIONS
from cqels_endpoint.errors import CqelsError


class LimitExceeded(CqelsError):
    """A query went past one of its ``Limits``: the engine fails that query (not the process)."""


@dataclass(frozen=True)
class Limits:
    """What one continuous query may hold or compute; None: unbounded (the module docstring)."""

    max_window_triples: int | None = None
    max_tick_rows: int | None = None
    action: str = "fail"  # what a full window does: "fail" the query or "shed" the new triples

    def __post_init__(self) -> None:
        for name in ("max_window_triples", "max_tick_rows"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                msg = f"{name} must be a positive integer or None (no bound), not {value!r}"
                raise ValueError(msg)
        if self.action not in LIMIT_ACTIONS:
            msg = f"limit action {self.action!r}: use {' or '.join(LIMIT_ACTIONS)}"
            raise ValueError(msg)

    @property
    def sheds(self) -> bool:
        return self.action == "shed"
