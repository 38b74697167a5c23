"""The exception tree of cqels-endpoint: one root, a few shallow branches.

Syntax and semantic errors in query text are Python ``SyntaxError``s (as in pyoxigraph and the
Python parser itself) so that tools which already know how to show a ``SyntaxError`` with a caret
work unchanged.

The static store's errors are its own (``static_store.errors``, rooted at ``StoreError``, not at
``CqelsError``: the store imports nothing of the engine); they are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from static_store.errors import (
    GraphNotFound,
    InvalidGraphName,
    LocatedStoreError,
    QueryTimeoutError,
    RdfSyntaxError,
    RemoteAccessError,
    RequestSyntaxError,
    StoreError,
    UnsupportedMediaType,
    UnsupportedRequest,
    UpdateError,
)

__all__ = [
    "ArgumentError",
    "CqelsError",
    "GraphNotFound",
    "InvalidGraphName",
    "LateEventError",
    "LocatedStoreError",
    "OperatorError",
    "PlanError",
    "QueryConflictError",
    "QuerySyntaxError",
    "QueryTimeoutError",
    "RdfSyntaxError",
    "RemoteAccessError",
    "RequestSyntaxError",
    "SharingError",
    "Span",
    "SparkUnavailableError",
    "StoreError",
    "UnknownQueryError",
    "UnsupportedMediaType",
    "UnsupportedRequest",
    "UpdateError",
]


class CqelsError(Exception):
    """Root of every error the engine raises on purpose."""


@dataclass(frozen=True)
class Span:
    """A region of a source text: 0-based character offsets, 1-based lines and columns.

    ``end_line``/``end_column`` point one past the last character, like Python's ``end_offset``.
    """

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def at(cls, text: str, start: int, end: int | None = None) -> Span:
        """The span of ``text[start:end]`` with its line and column numbers computed."""
        end = start if end is None else end
        line, column = _line_column(text, start)
        end_line, end_column = _line_column(text, end)
        return cls(start, end, line, column, end_line, end_column)

    def cover(self, other: Span | None) -> Span:
        """The smallest span holding both ``self`` and ``other``."""
        if other is None:
            return self
        first = self if self.start <= other.start else other
        last = self if self.end >= other.end else other
        return Span(first.start, last.end, first.line, first.column, last.end_line, last.end_column)


def _line_column(text: str, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


class QuerySyntaxError(CqelsError, SyntaxError):
    """A query or update that does not parse, or breaks a SPARQL 1.1 / CQELS static rule.

    Carries ``lineno``, ``offset``, ``end_lineno``, ``end_offset`` (1-based, as ``SyntaxError``),
    ``text`` (the offending line) and ``span``; ``str()`` quotes the line with a caret.
    """

    def __init__(self, message: str, source: str, span: Span):
        self.message = message
        self.source = source
        self.span = span
        lines = source.splitlines() or [""]
        line_text = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
        end_column = span.end_column if span.end_line == span.line else len(line_text) + 1
        SyntaxError.__init__(
            self,
            message,
            ("<query>", span.line, span.column, line_text, span.end_line, end_column),
        )
        self.msg = message

    @classmethod
    def at(cls, message: str, source: str, start: int, end: int | None = None) -> QuerySyntaxError:
        """An error located at ``source[start:end]``."""
        return cls(message, source, Span.at(source, start, end))

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def __str__(self) -> str:
        line_text = (self.text or "").rstrip("\n")
        width = 1
        if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
            width = self.span.end_column - self.span.column
        caret = " " * (self.span.column - 1) + "^" * width
        return f"{self.message} (line {self.span.line}, column {self.span.column})\n  {line_text}\n  {caret}"

    def to_json(self) -> dict:
        """The ``{"error", "line", "column"}`` body the HTTP layer returns."""
        return {"error": str(self), "line": self.span.line, "column": self.span.column}


class PlanError(CqelsError):
    """A query that parses but cannot be compiled into a plan (an unsupported construct)."""


class ArgumentError(CqelsError, ValueError):
    """A bad argument from the caller: an unknown R2S or mode, a name already in use, a malformed
    instance description. A ``ValueError`` too, so callers that catch that still do; the HTTP
    layer answers it with a 400, while any other ``ValueError`` is a bug (a 500)."""


class SharingError(PlanError):
    """A template whose instances cannot share one plan (``instances.py``); each gets its own."""


class SparkUnavailableError(CqelsError):
    """The Spark cache engine cannot run: Java or pyspark is missing, or the session failed to start."""


class OperatorError(CqelsError):
    """A runtime failure inside an operator; the message names the operator and its query line."""


class LateEventError(CqelsError):
    """A stream event older than its stream's watermark (latest timestamp − the engine's lateness).

    The event was rejected whole and counted (``Engine.late_events(stream)``); nothing was applied.
    Push it with a timestamp at or after ``watermark``, or build the engine with a larger
    ``lateness_ms`` so that out-of-order events are buffered and reordered.

    In a batch (``Engine.push_batch``) ``index`` is the 0-based position of the first late event
    and ``late_in_batch`` how many of its events were late (all counted); the batch was rejected whole.
    """

    def __init__(self, stream: str, time: int, watermark: int, *, index: int = 0, late_in_batch: int = 1):
        self.stream = stream
        self.time = time
        self.watermark = watermark
        self.index = index
        self.late_in_batch = late_in_batch
        msg = (
            f"event at {time} ms on stream <{stream}> is late: the stream's watermark is {watermark} ms; "
            "push it with a later timestamp or raise the engine's lateness_ms"
        )
        super().__init__(msg)


class UnknownQueryError(CqelsError, KeyError):
    """No continuous query is registered under that name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown query"


class QueryConflictError(CqelsError):
    """A continuous query or instance name that is already taken (HTTP 409)."""
