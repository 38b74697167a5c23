"""Window durations → integer milliseconds.

The grammar's DURATION token admits ``500ms 30s 5m 2h 1d 1w``, compounds (``1h30m``,
``1 hour 30 minutes``), words (``30 minutes``, ``2 seconds``) and ISO 8601 durations without years
and months (``PT30M``, ``PT1H30M``, ``P1D``, ``PT0.5S``); units are case-insensitive, so ``M`` is
minutes, never months. This module turns such a token into milliseconds.
"""

from __future__ import annotations

import re
from decimal import Decimal

# The longest window the engine holds: 2**53 ms (about 285,000 years) keeps every event time plus a
# window length inside the engine's 64-bit arithmetic (and exact in a double).
MAX_DURATION_MS = 1 << 53

_MS_PER_UNIT = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}
_UNIT_WORDS = {
    "ms": "ms",
    "millis": "ms",
    "msec": "ms",
    "msecs": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "m": "m",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "h": "h",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
    "w": "w",
    "week": "w",
    "weeks": "w",
}
_PART = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)")
_ISO = re.compile(
    r"p(?:([0-9]+)w)?(?:([0-9]+)d)?(?:t(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+(?:\.[0-9]+)?)s)?)?"
)


def parse_duration(text: str) -> int:
    """Milliseconds of a DURATION token: ``"1h30m"`` → ``5_400_000``, ``"PT0.5S"`` → ``500``.

    Raises ``ValueError`` (with a message fit for the user) when the text is not a duration, is not
    a whole number of milliseconds or is longer than ``MAX_DURATION_MS``.
    """
    lowered = text.strip().lower()
    total = Decimal(0)
    iso = _ISO.fullmatch(lowered)
    if iso is not None:
        if not any(iso.groups()):
            msg = f"{text!r} is an empty ISO 8601 duration; write e.g. PT30S"
            raise ValueError(msg)
        for amount, unit in zip(iso.groups(), ("w", "d", "h", "m", "s"), strict=True):
            if amount is not None:
                total += Decimal(amount) * _MS_PER_UNIT[unit]
    else:
        position = 0
        while position < len(lowered):
            part = _PART.match(lowered, position)
            if part is None or part.group(2) not in _UNIT_WORDS:
                msg = f"{text!r} is not a duration; write e.g. 500ms, 30s, 5m, 2h, 1d, 1h30m or PT30M"
                raise ValueError(msg)
            total += Decimal(part.group(1)) * _MS_PER_UNIT[_UNIT_WORDS[part.group(2)]]
            position = part.end()
    if total != total.to_integral_value():
        msg = f"{text!r} is not a whole number of milliseconds"
        raise ValueError(msg)
    if total > MAX_DURATION_MS:
        msg = f"{text!r} is longer than the longest window the engine holds ({MAX_DURATION_MS} ms, about 285,000 years)"
        raise ValueError(msg)
    return int(total)
