"""The leaf of a stream triple pattern read from a variable stream (``STREAM ?s [w] { … }``).

Each stream's window is a named graph of its own, named by the stream's IRI, which the pattern binds
to ``?s`` as ``GRAPH ?g`` binds a graph's name: the same triple pushed on two streams is two rows,
one per stream, and the windows are sets of triples stream by stream. ``StreamWindows`` keeps one
window buffer per stream (compiled or twin, as every window buffer: ``operators/__init__``), made at
the stream's first triple, and hands on their deltas as one batch per tick with the stream's term
id appended as the last column. Lineages stay the engine's ``seq`` numbers, unique over all streams.

The engine feeds it like a window buffer, a copy's ids followed by its stream's id
(``insert(seq, (s, p, o, stream))``). A triple that does not hold the stream's IRI where the pattern
names ``?s`` itself (``STREAM ?s { ?s :p ?o }``) is not kept. Dictionary references: each stream
buffer holds those of its triples (the ``WindowBufferBase`` contract); of the stream ids, this
source keeps the first copy's while the stream's buffer lives (until ``close``) and hands the others
back one tick later, as a window buffer hands back the copies it does not keep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator, Source
from cqels_endpoint.operators.shared.join import WindowBufferBase
from cqels_endpoint.operators.shared.schemas import pattern_schema


class _StreamColumn(Operator):
    """Downstream of one stream's buffer: its rows, extended with the stream's id, join the owner's
    pending batch; the buffer's punctuation stops here (the owner forwards one for all)."""

    def __init__(self, owner: StreamWindows, stream: int) -> None:
        super().__init__(owner.schema, f"{owner.label} <stream {stream}>")
        self.owner = owner
        self.stream = stream

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        stream = self.stream
        self.owner._pending.extend(Delta((*row, stream), sign, lineage) for row, sign, lineage in deltas)

    def on_punctuation(self, tau: int) -> None:
        """The owner forwards the tick's punctuation once, after every stream's buffer has flushed."""


class StreamWindows(Source):
    """Leaf source of a ``STREAM ?s`` triple pattern (module docstring). ``positions`` names the
    variables at subject, predicate and object (None for a constant) as a window buffer's do,
    ``stream_column`` the stream's variable; ``make_buffer(positions)`` makes one stream's buffer."""

    fed_by = "insert()/expire()"

    def __init__(
        self,
        positions: Sequence[str | None],
        stream_column: str,
        make_buffer: Callable[[tuple[str | None, ...]], WindowBufferBase],
        label: str = "",
        on_release: Callable[[tuple], None] | None = None,
    ) -> None:
        # Where the triple names the stream's variable it must hold the stream: checked here, so
        # each stream's buffer sees a constant there.
        inner = tuple(None if name == stream_column else name for name in positions)
        super().__init__((*pattern_schema(inner), stream_column), label or "stream windows", on_release)
        self._inner = inner
        self._named = tuple(i for i, name in enumerate(positions) if name == stream_column)
        self._make = make_buffer
        self._buffers: dict[int, WindowBufferBase] = {}  # by stream id, in the order first read
        self._stream_of: dict[int, int] = {}  # the stream id of each copy a buffer took
        self.rejected = 0

    def insert(self, seq: int, ids: tuple[int, int, int, int]) -> None:
        """Copy ``seq`` of the triple ``ids[:3]`` of the stream ``ids[3]`` enters its window."""
        triple, stream = tuple(ids[:3]), ids[3]
        if any(triple[i] != stream for i in self._named):
            self.inputs_seen += 1
            self.rejected += 1
            self._released.append(tuple(ids))
            return
        buffer = self._buffers.get(stream)
        if buffer is None:
            buffer = self._buffers[stream] = self._make(self._inner)
            buffer.connect(_StreamColumn(self, stream))
        else:
            self._released.append((stream,))
        self.inputs_seen += 1
        self._stream_of[seq] = stream
        buffer.insert(seq, triple)

    def expire(self, seq: int) -> None:
        """Copy ``seq`` leaves its stream's window (ignored if it was never kept)."""
        stream = self._stream_of.pop(seq, None)
        if stream is not None:
            self._buffers[stream].expire(seq)

    def on_punctuation(self, tau: int) -> None:
        for buffer in self._buffers.values():
            buffer.on_punctuation(tau)
        super().on_punctuation(tau)

    def held(self) -> list[tuple]:
        return [(stream,) for stream in self._buffers]

    def close(self) -> None:
        for buffer in self._buffers.values():
            buffer.close()
        super().close()
        self._buffers, self._stream_of = {}, {}

    def __len__(self) -> int:
        return sum(len(buffer) for buffer in self._buffers.values())

    def counters(self) -> dict[str, Any]:
        expired = sum(buffer.expired for buffer in self._buffers.values())
        return {**super().counters(), "streams": len(self._buffers), "size": len(self), "expired": expired}
