"""Window *configurations*: frozen, hashable, parsed once.

The runtime builds window *state* from these (``runtime/``); the parser, the algebra and the
planner only ever see the configuration. All durations are integer milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RangeWindow:
    """``RANGE T`` (eager when ``slide_ms`` is None), ``RANGE T SLIDE β`` / ``STEP β`` (periodic).

    ``RANGE T TUMBLING`` is ``RANGE T SLIDE T``.
    """

    range_ms: int
    slide_ms: int | None = None

    @property
    def periodic(self) -> bool:
        return self.slide_ms is not None


@dataclass(frozen=True)
class NowWindow:
    """``NOW``: the triples of the current tick only."""


@dataclass(frozen=True)
class AllWindow:
    """``ALL``: every triple since the query started."""


@dataclass(frozen=True)
class TriplesWindow:
    """``TRIPLES n`` / RSP-QL ``COUNT n``: the last ``n`` triples matching each triple pattern."""

    count: int


WindowConfig = RangeWindow | NowWindow | AllWindow | TriplesWindow


def format_duration(ms: int) -> str:
    """The shortest unit form that round-trips through the parser: ``90000`` → ``"90s"``."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def format_window(window: WindowConfig) -> str:
    """The CQELS surface syntax of a window, e.g. ``[RANGE 30s SLIDE 5s]``."""
    match window:
        case RangeWindow(range_ms, None):
            return f"[RANGE {format_duration(range_ms)}]"
        case RangeWindow(range_ms, slide_ms):
            return f"[RANGE {format_duration(range_ms)} SLIDE {format_duration(slide_ms)}]"
        case NowWindow():
            return "[NOW]"
        case AllWindow():
            return "[ALL]"
        case TriplesWindow(count):
            return f"[TRIPLES {count}]"
    raise TypeError(f"not a window configuration: {window!r}")
