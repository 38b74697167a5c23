"""Content negotiation: choosing one of the store's syntaxes from ``Accept`` or ``?format=``.

What the endpoint speaks is ``static_store.formats`` (``RESULTS_FORMATS``, ``GRAPH_FORMATS``):
each ``MediaFormat`` has its canonical media type (what the store is asked for), aliases that
mean the same, and short names for the ``?format=`` override.

>>> from static_store import GRAPH_FORMATS, RESULTS_FORMATS
>>> choose(RESULTS_FORMATS, "text/csv;q=0.5, application/sparql-results+xml").media_type
'application/sparql-results+xml'
>>> choose(GRAPH_FORMATS, None).media_type
'text/turtle'
>>> choose(RESULTS_FORMATS, "text/turtle") is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from static_store import MediaFormat


@dataclass(frozen=True)
class MediaRange:
    type: str
    subtype: str
    q: float
    position: int  # order in the header; earlier wins a tie

    def matches(self, media_type: str) -> int | None:
        """How specifically this range names ``media_type`` (2 exact, 1 ``type/*``, 0 ``*/*``)."""
        main, _, sub = media_type.partition("/")
        if self.type == "*":
            return 0
        if self.type != main:
            return None
        if self.subtype == "*":
            return 1
        return 2 if self.subtype == sub else None


def parse_accept(header: str | None) -> list[MediaRange]:
    """The media ranges of an ``Accept`` header; malformed entries are skipped, not fatal."""
    ranges = []
    for position, item in enumerate((header or "").split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        main, slash, sub = media.lower().partition("/")
        if not slash or not main or not sub or (main == "*" and sub != "*"):
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = -1.0
        if 0.0 <= q <= 1.0:
            ranges.append(MediaRange(main, sub, q, position))
    return ranges


@lru_cache(maxsize=512)  # clients send the same few Accept headers over and over
def choose(formats: tuple[MediaFormat, ...], accept: str | None) -> MediaFormat | None:
    """The format the client prefers, or None when it accepts none of them.

    The quality of a format is that of the most specific range naming it (RFC 9110 §12.5.1);
    aliases count only when named exactly. Ties go to an explicitly named type over a wildcard,
    then to the client's order, then to ours (so ``*/*`` or no ``Accept`` at all gets the first,
    default format).
    """
    ranges = parse_accept(accept)
    if not ranges:
        return formats[0]
    best, best_key = None, None
    for rank, fmt in enumerate(formats):
        for media_type in fmt.media_types:
            matching = [(r.matches(media_type), r) for r in ranges]
            # Wildcards match canonical types only: text/* must not pick SPARQL XML through text/xml.
            matching = [
                (specificity, r)
                for specificity, r in matching
                if specificity is not None and (specificity == 2 or media_type == fmt.media_type)
            ]
            if not matching:
                continue
            specificity, chosen = max(matching, key=lambda m: (m[0], -m[1].position))
            if chosen.q <= 0:
                continue
            key = (chosen.q, specificity, -chosen.position, -rank)
            if best_key is None or key > best_key:
                best, best_key = fmt, key
    return best


def by_name(formats: Sequence[MediaFormat], name: str) -> MediaFormat | None:
    """The format named by a ``?format=`` value: a short name or any of its media types."""
    wanted = name.strip().lower()
    for fmt in formats:
        if wanted in fmt.names or wanted in fmt.media_types:
            return fmt
    return None


def offered(formats: Sequence[MediaFormat]) -> list[str]:
    """The canonical media types, for error messages."""
    return [fmt.media_type for fmt in formats]


def negotiated(formats: tuple[MediaFormat, ...], format_name: str | None) -> MediaFormat:
    """The format for the current request: ``?format=`` if given, else from ``Accept``; 406 if none fits."""
    from flask import abort, request

    from cqels_endpoint.http.errors import not_acceptable

    if format_name is not None:
        fmt = by_name(formats, format_name)
        if fmt is None:
            abort(not_acceptable(f"format={format_name}", [", ".join(f.names) for f in formats]))
        return fmt
    accept = request.headers.get("Accept")
    fmt = choose(formats, accept)
    if fmt is None:
        abort(not_acceptable(accept, offered(formats)))
    return fmt
