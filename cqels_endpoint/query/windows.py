"""Window *configurations*: frozen, hashable, parsed once.

The runtime builds window *state* from these (``runtime/``); the parser, the algebra and the
planner only ever see the configuration. All durations are integer milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RangeWindow:
    """``RANGE T`` (eager when ``slide_ms`` is None), ``RANGE T SLIDE β`` / ``STEP β`` (periodic).

    ``RANGE T TUMBLING`` is ``RANGE T SLIDE T``; CQELS-QL 2.0 ``PAST T`` is ``RANGE T`` and
    ``SLIDE T STEP β`` is ``RANGE T STEP β``.
    """

    range_ms: int
    slide_ms: int | None = None

    @property
    def periodic(self) -> bool:
        return self.slide_ms is not None


@dataclass(frozen=True)
class NowWindow:
    """``NOW``: the triples of the current instant (``t = τ``)."""


@dataclass(frozen=True)
class AllWindow:
    """``ALL``: every triple since the query started."""


@dataclass(frozen=True)
class TriplesWindow:
    """``TRIPLES n`` / RSP-QL ``COUNT n``: the last ``n`` triples matching each triple pattern; with
    ``stream_wide`` (CQELS-QL 2.0's reading, ``query.dialects``) the last ``n`` statements of the
    stream, whatever they match, of which each triple pattern sees those it matches."""

    count: int
    stream_wide: bool = False


@dataclass(frozen=True)
class DirectionalWindow:
    """A LARS directional window of CQELS-QL 2.0 reaching ``future`` past each anchor:
    ``[RANGE p FUTURE f]`` = ``[PAST p FUTURE f]``, ``[FUTURE f]`` (``past`` 0), each with an optional
    ``STEP s``; with ``count``, ``[TRIPLES PAST n FUTURE m]`` / ``[TRIPLES FUTURE m]`` in triples
    (``past`` and ``future`` are then triple counts, else milliseconds). ``[PAST p]`` alone is
    ``RangeWindow(p)``. At an anchor ``a`` it holds ``a − past < t ≤ a + future`` (count: the last
    ``past`` triples with ``t ≤ a`` and the first ``future`` after ``a``): runtime/anchors.py."""

    past: int
    future: int
    step_ms: int | None = None
    count: bool = False


@dataclass(frozen=True)
class PolicyWindow:
    """A window with the CQELS-QL 2.0 clauses ``EMIT ON_UPDATE|ON_CLOSE|EARLY_AND_FINAL`` (``emit``,
    upper-case) and/or ``LATENESS d``. The translation takes the policy to the query
    (``AlgebraQuery.emit``/``lateness_ms``) and gives the patterns ``window`` (``window_extent``)."""

    window: RangeWindow | NowWindow | AllWindow | TriplesWindow | DirectionalWindow
    emit: str | None = None
    lateness_ms: int | None = None


WindowConfig = RangeWindow | NowWindow | AllWindow | TriplesWindow | DirectionalWindow | PolicyWindow


def window_extent(window: WindowConfig) -> WindowConfig:
    """What the window holds, without its EMIT/LATENESS policy."""
    return window.window if isinstance(window, PolicyWindow) else window


def stream_wide(window: WindowConfig) -> bool:
    """Whether ``window`` counts every statement of its stream (``TriplesWindow.stream_wide``)."""
    extent = window_extent(window)
    return isinstance(extent, TriplesWindow) and extent.stream_wide


def written_window(window: WindowConfig) -> WindowConfig:
    """``window`` as query text spells it: a count window is ``[TRIPLES n]`` whichever way the
    dialect reads it."""
    match window:
        case TriplesWindow(count, True):
            return TriplesWindow(count)
        case PolicyWindow(inner, emit, lateness_ms):
            return PolicyWindow(written_window(inner), emit, lateness_ms)
    return window


def format_duration(ms: int) -> str:
    """The shortest unit form that round-trips through the parser: ``90000`` → ``"90s"``."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def format_window(window: WindowConfig) -> str:
    """The CQELS surface syntax of a window, e.g. ``[RANGE 30s SLIDE 5s]``; a stream-wide count
    window shows as ``[TRIPLES n OF STREAM]``, which does not parse: query text writes it
    ``[TRIPLES n]`` (``written_window``), which the cqels2 dialect reads so."""
    match window:
        case RangeWindow(range_ms, None):
            return f"[RANGE {format_duration(range_ms)}]"
        case RangeWindow(range_ms, slide_ms):
            return f"[RANGE {format_duration(range_ms)} SLIDE {format_duration(slide_ms)}]"
        case NowWindow():
            return "[NOW]"
        case AllWindow():
            return "[ALL]"
        case TriplesWindow(count, stream_wide):
            return f"[TRIPLES {count}{' OF STREAM' if stream_wide else ''}]"
        case DirectionalWindow(past, future, step_ms, count):
            extent = format_duration if not count else str
            text = "TRIPLES " if count else ""
            text += f"PAST {extent(past)} " if past or not future else ""
            text += f"FUTURE {extent(future)}" if future else ""
            text += f" STEP {format_duration(step_ms)}" if step_ms is not None else ""
            return f"[{text.strip()}]"
        case PolicyWindow(inner, emit, lateness_ms):
            policy = f" EMIT {emit}" if emit is not None else ""
            policy += f" LATENESS {format_duration(lateness_ms)}" if lateness_ms is not None else ""
            return f"{format_window(inner)[:-1]}{policy}]"
    raise TypeError(f"not a window configuration: {window!r}")
