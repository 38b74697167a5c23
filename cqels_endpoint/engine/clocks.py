"""Stream clocks that survive a restart: ``streams.json`` and ``streams.journal`` in the data directory.

What is kept, per stream: its latest timestamp (the watermark follows from it and the lateness),
its counters (accepted, out of order, late, future, malformed) and the events it accepted but has
not released yet (lateness buffer, as N-Triples text). The engine's floor (its latest ``advance``)
is kept too. So a restarted server rejects what it rejected before the restart (it does not reopen
the past), and accepted events still waiting for the watermark are released after it, in order (it
does not lose them). Window contents are not kept: a restarted query starts with empty windows.

**Files.** ``streams.json`` is a snapshot, written atomically (temporary file, fsync, rename, fsync
of the directory). ``streams.journal`` holds, after a header line naming the snapshot's
``generation``, one JSON line per change since it: the clock state of the stream a push, a
rejection or a reset changed, with the events it buffered, or the floor an advance moved. A line is
written (one ``write``, unbuffered) under the engine's lock before the push is answered: a killed
process loses nothing it answered. Lines are not fsynced — an fsync per push would cost
milliseconds — so an OS crash or power loss may lose the last changes, as it may lose the last
commits of the store itself (``static_store/journal.py``). A journal over ``COMPACT_BYTES`` is
folded into a new snapshot (also at start and at ``close``); a journal whose generation is not the
snapshot's was folded already and is ignored, so a crash between the two writes loses nothing.
A last line cut short by a crash (no newline) is ignored; any other unreadable content stops the start
(``ClockFileError``) rather than silently reopening the past.

**Buffered events.** A journal line carries the events its push left in the lateness buffer (only
with a lateness > 0: otherwise an accepted event is released at once). An event is released exactly
when the watermark reaches it, so on restore the events at or below the watermark of the stream's
last releasing change are the ones released before the crash and are dropped; the others go back
into the buffer.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.engine.durable import write_durably
from cqels_endpoint.errors import CqelsError
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.streams import Event, Streams, event_triples

log = logging.getLogger("cqels_endpoint.engine")

FILE_NAME = "streams.json"
JOURNAL_NAME = "streams.journal"
FILE_FORMAT = 1
COMPACT_BYTES = 4 << 20

# (time, N-Triples text) of a buffered event, as the files hold it.
Buffered = list[list]


class ClockFileError(CqelsError):
    """``streams.json`` or ``streams.journal`` cannot be read."""


@dataclass
class _Saved:
    """What the files hold once read: the engine's floor, each stream's clock state, buffered
    events and the lateness its releases were made with, and the streams a releasing change of the
    journal touched (their buffers are trimmed to the watermark)."""

    generation: int = 0
    floor: int | None = None
    states: dict[str, dict] = field(default_factory=dict)
    buffered: dict[str, Buffered] = field(default_factory=dict)
    lateness: int = 0
    released: set[str] = field(default_factory=set)

    def apply(self, record: dict) -> None:
        if "floor" in record:
            self.floor = record["floor"] if self.floor is None else max(self.floor, record["floor"])
            for state in self.states.values():
                state["latest"] = self.floor if state["latest"] is None else max(state["latest"], self.floor)
            self.released.update(self.states)
            return
        stream = record["stream"]
        if record.get("reset"):
            self.buffered[stream] = []
        self.states[stream] = record["clock"]
        self.buffered.setdefault(stream, []).extend(record.get("events", ()))
        if record.get("released"):
            self.released.add(stream)

    def trimmed(self, stream: str) -> Buffered:
        """The buffered events of ``stream`` not released before the files were written."""
        events = self.buffered.get(stream, [])
        latest = self.states.get(stream, {}).get("latest")
        if stream not in self.released or latest is None:
            return events
        return [event for event in events if event[0] > latest - self.lateness]


class ClockStore:
    """The clock files of one data directory, kept in step with ``streams`` by the engine (which
    calls every method under its lock)."""

    def __init__(self, directory: Path, streams: Streams, dictionary: TermDictionary):
        self.path = Path(directory) / FILE_NAME
        self.journal_path = Path(directory) / JOURNAL_NAME
        self.streams = streams
        self.dictionary = dictionary
        self.generation = 0
        self._journal: int | None = None  # file descriptor, O_APPEND
        self._size = 0

    def restore(self) -> int:
        """Puts the saved clocks and buffered events back into ``streams`` (its clocks must be new)
        and starts a fresh journal; returns how many streams were restored."""
        saved = self._read()
        streams = self.streams
        streams.floor = saved.floor
        for stream, state in saved.states.items():
            streams.clock(stream).restore(state)
            for time, text in saved.trimmed(stream):
                streams.buffer(stream, time, self.dictionary.encode_triples(event_triples(text)))
        self.generation = saved.generation
        self.compact()
        return len(saved.states)

    def record(self, stream: str, accepted: list[Event] = (), *, released: bool = False, reset: bool = False) -> None:
        """Journals the clock of ``stream`` after a change: ``accepted``, the events it accepted
        (those a lateness buffer may still hold are kept with it), ``released`` whether the change
        ran the buffer's release, ``reset`` whether it was a reset."""
        clock = self.streams.clocks[stream]
        record: dict = {"stream": stream, "clock": clock.state()}
        if clock.lateness_ms > 0 and accepted:
            record["events"] = [[event.time, self._text(event)] for event in accepted]
        if released:
            record["released"] = True
        if reset:
            record["reset"] = True
        self._append(record)

    def record_floor(self, floor: int) -> None:
        """Journals an advance of every clock to ``floor``."""
        self._append({"floor": floor})

    def compact(self) -> None:
        """Writes the snapshot of every clock (next generation), then an empty journal for it."""
        self.generation += 1
        streams = {
            stream: {"clock": clock.state(), "buffered": [[e.time, self._text(e)] for e in self.streams.buffered_events(stream)]}
            for stream, clock in self.streams.clocks.items()
        }
        snapshot = {"format": FILE_FORMAT, "generation": self.generation, "lateness_ms": self.streams.lateness_ms,
                    "floor": self.streams.floor, "streams": streams}
        write_durably(self.path, json.dumps(snapshot, ensure_ascii=False), backup=False)
        header = json.dumps({"format": FILE_FORMAT, "generation": self.generation, "lateness_ms": self.streams.lateness_ms})
        write_durably(self.journal_path, header + "\n", backup=False)
        self.close()
        self._journal = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND)
        self._size = len(header) + 1

    def close(self) -> None:
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None

    # ------------------------------------------------------------------ internals

    def _append(self, record: dict) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        os.write(self._journal, line)
        self._size += len(line)
        if self._size > COMPACT_BYTES:
            self.compact()

    def _text(self, event: Event) -> str:
        terms = self.dictionary.decode_row(event.ids)
        # str() of a Triple writes a triple term in it as "<<( s p o )>>", as N-Triples does.
        return "".join(f"{ox.Triple(*terms[i:i + 3])} .\n" for i in range(0, len(terms), 3))

    def _read(self) -> _Saved:
        saved = _Saved()
        if self.path.exists():
            try:
                snapshot = json.loads(self.path.read_text(encoding="utf-8"))
                if snapshot.get("format") != FILE_FORMAT:
                    raise ValueError(f"format {snapshot.get('format')!r}, not {FILE_FORMAT}")
                saved.generation, saved.floor = snapshot["generation"], snapshot["floor"]
                saved.lateness = snapshot["lateness_ms"]
                for stream, entry in snapshot["streams"].items():
                    saved.states[stream], saved.buffered[stream] = entry["clock"], entry["buffered"]
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise ClockFileError(f"cannot read the stream clocks in {self.path}: {error}; move it away to start "
                                     "with fresh clocks (events older than the old ones are then accepted again)") from None
        if self.journal_path.exists():
            self._replay(saved)
        return saved

    def _replay(self, saved: _Saved) -> None:
        data = self.journal_path.read_bytes()
        torn = not data.endswith(b"\n")  # every line is written whole with its newline, unless cut short
        lines = data.split(b"\n")
        if not torn:
            lines.pop()
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
                if number == 1:
                    if record.get("generation") != saved.generation:
                        return  # folded into the snapshot already
                    saved.lateness = record["lateness_ms"]
                    continue
                saved.apply(record)
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                if torn and number == len(lines) and number > 1:
                    log.warning("ignored the last line of %s, cut short by a crash: %s", self.journal_path, error)
                    return
                raise ClockFileError(f"cannot read line {number} of the stream clock journal {self.journal_path}: "
                                     f"{error}; move it away to start from {self.path} alone") from None


