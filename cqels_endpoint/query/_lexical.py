"""Lexical helpers of the SPARQL parser: codepoint escapes, string and local-name escapes.

Codepoint escapes (``\\uXXXX``, ``\\UXXXXXXXX``, SPARQL 1.1 §19.2) may appear anywhere in a query and
are replaced before the grammar is applied, in a single pass: an escape that produces a backslash
never starts another escape. The replacement shifts character offsets, so ``unescape_codepoints``
also returns, for every offset of the new text, the offset it came from in the original, and spans
are reported against the text the user wrote.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from cqels_endpoint.errors import QuerySyntaxError, Span

# `\\` is matched too so that an escaped backslash (`"C:\\u…"` inside a string) is skipped whole.
_CODEPOINT_ESCAPE = re.compile(r"\\\\|\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_HIGH_SURROGATES = range(0xD800, 0xDC00)
_LOW_SURROGATES = range(0xDC00, 0xE000)


def unescape_codepoints(text: str) -> tuple[str, list[int] | None]:
    """``text`` with codepoint escapes replaced, and the offset map (None when nothing changed).

    The map has ``len(result) + 1`` entries: ``origin[i]`` is the offset in ``text`` of the
    character at offset ``i`` of the result (the last entry is ``len(text)``).
    """
    if "\\u" not in text and "\\U" not in text:
        return text, None
    parts: list[str] = []
    origin: list[int] = []
    copied_to = 0
    matches = list(_CODEPOINT_ESCAPE.finditer(text))
    index = 0
    while index < len(matches):
        match = matches[index]
        index += 1
        if match.group(0) == "\\\\":
            continue
        code = int(match.group(1) or match.group(2), 16)
        end = match.end()
        if code in _HIGH_SURROGATES and index < len(matches):
            # A UTF-16 surrogate pair written as two escapes is one code point.
            following = matches[index]
            low = int(following.group(1), 16) if following.start() == end and following.group(1) else None
            if low is not None and low in _LOW_SURROGATES:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                end = following.end()
                index += 1
        if code in _HIGH_SURROGATES or code in _LOW_SURROGATES or code > 0x10FFFF:
            msg = (
                f"{match.group(0)} is not a Unicode code point "
                "(surrogate halves and values above 10FFFF are not allowed)"
            )
            raise QuerySyntaxError.at(msg, text, match.start(), match.end())
        parts.append(text[copied_to : match.start()])
        origin.extend(range(copied_to, match.start()))
        parts.append(chr(code))
        origin.append(match.start())
        copied_to = end
    parts.append(text[copied_to:])
    origin.extend(range(copied_to, len(text) + 1))
    return "".join(parts), origin


_NEWLINE = re.compile(r"\n")
_ECHAR = re.compile(r"\\(.)", re.S)
_ECHAR_VALUES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def unescape_string(body: str) -> str:
    """The value of a string literal's body (between its quotes): ECHAR escapes replaced.

    The grammar admits only the eight ECHAR escapes, so every backslash starts one of them.
    """
    if "\\" not in body:
        return body
    return _ECHAR.sub(lambda m: _ECHAR_VALUES[m.group(1)], body)


_LOCAL_ESCAPE = re.compile(r"\\(.)")


def unescape_local_name(local: str) -> str:
    """A prefixed name's local part with its ``\\``-escapes (PN_LOCAL_ESC) removed; ``%xx`` is kept."""
    if "\\" not in local:
        return local
    return _LOCAL_ESCAPE.sub(r"\1", local)


class Source:
    """A query text as written and as parsed (codepoint escapes replaced), with span conversion.

    Lark reports offsets in the parsed text; every span and error goes through ``span`` so that it
    points into the text the user wrote. Line numbers come from a table of line starts (a binary
    search per span), since a parse makes thousands of spans.
    """

    __slots__ = ("_line_starts", "origin", "original", "text")

    def __init__(self, original: str):
        self.original = original
        self.text, self.origin = unescape_codepoints(original)
        self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(original))]

    def span(self, start: int, end: int) -> Span:
        """The span of ``text[start:end]`` in the original text."""
        if self.origin is not None:
            start, end = self.origin[start], self.origin[end]
        starts = self._line_starts
        line = bisect_right(starts, start)
        line_start = starts[line - 1]
        if line == len(starts) or end < starts[line]:  # on one line, the usual case
            return Span(start, end, line, start - line_start + 1, line, end - line_start + 1)
        end_line = bisect_right(starts, end, lo=line)
        return Span(start, end, line, start - line_start + 1, end_line, end - starts[end_line - 1] + 1)

    def error(self, message: str, start: int, end: int | None = None) -> QuerySyntaxError:
        """A ``QuerySyntaxError`` located at ``text[start:end]`` (offsets in the parsed text)."""
        return QuerySyntaxError(message, self.original, self.span(start, start if end is None else end))
