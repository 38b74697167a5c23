"""``FILTER(SEQ(…))``: the events of each step built from timed triples, matched by the CEP automaton.

A ``SeqMatch`` is a source (docs/ARCHITECTURE.md, "Complex event processing"). The evaluator hands
it the triples of its steps' event patterns *with their timestamps* (``insert(pattern_id, seq,
ids, t)``, ``expire(pattern_id, seq)``), where other patterns go to a window buffer, which keeps no
time. An event of a step at time ``t`` is one consistent combination of one triple per event pattern
of the step, all with the same subject and the same ``t``; a pattern's window holds a set of timed
triples (a copy of a triple with a time it already holds only counts). Each new event passing the
step's per-event FILTERs gets a key (increasing in arrival order) and enters the matcher
(``runtime.cep.build_matcher``), which keeps the bag of matches as the window changes; at the
punctuation the matcher's signed changes become the operator's deltas: the bound events' rows
concatenated in step order, lineage the tuple of their keys.

The guards (the translation splits them into ``&&`` conjuncts) are asked as early as they can be:
each conjunct at the level of the last bound step whose columns it reads, as the matcher's prefix
guard of that level, on the row of the prefix's events, so a partial match failing it is never
extended. A gap step's guards are the matcher's gap guard of that step, at the level of the last
bound step they read: asked on the prefix's row followed by the gap event's, they decide which of
the step's events count for a match's gap. ``sameTerm`` of a column and an internal one (the
translation's form of a variable shared by two steps, a join) compares the two ids, as a join does.

Dictionary references, as in a window buffer: the first copy of a timed triple keeps its references
while the triple is held; every other copy's, and the held triple's once it left, go back through
``on_release`` at the next punctuation, so the -1 rows of a tick stay decodable until the evaluator
has decoded them. The rows of events that left stay here until the punctuation that reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import count, product
from typing import Any

from cqels_endpoint.algebra.nodes import is_internal
from cqels_endpoint.operators.base import Delta, Source
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.cep import GapTest, Guard, SeqSpec, SeqStep, build_matcher
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import compile_filter
from cqels_endpoint.terms import Var


@dataclass(frozen=True)
class SeqInput:
    """One step as the operator needs it: ``patterns`` are ``(pattern_id, positions)`` of its event
    patterns (``positions``: the column at subject, predicate and object, None for a constant),
    ``columns`` the event row's columns, ``filters`` the per-event FILTER expressions, ``guards`` a
    gap step's gap guards."""

    bound: bool
    low: int
    high: int | None
    patterns: tuple[tuple[int, tuple[str | None, str | None, str | None]], ...]
    columns: tuple[str, ...]
    filters: tuple[object, ...] = ()
    guards: tuple[object, ...] = ()


_Entry = tuple  # (pattern_id, ids, t): one timed triple of one event pattern


class SeqMatch(Source):
    """The matches of one SEQ as a source of rows (module docstring)."""

    fed_by = "insert()/expire()"

    def __init__(
        self,
        steps: Sequence[SeqInput],
        guards: Sequence[object],
        decoder: TermDecoder,
        label: str = "",
        on_release: Callable[[tuple], None] | None = None,
        **context: Any,
    ) -> None:
        schema = tuple(c for step in steps if step.bound for c in step.columns)
        super().__init__(schema, label or "seq", on_release)
        self._steps = tuple(steps)
        self._decoder = decoder
        # pattern id → (step, slot of the pattern in the step, its positions)
        self._slots: dict[int, tuple[int, int, tuple]] = {
            pattern_id: (index, slot, positions)
            for index, step in enumerate(steps)
            for slot, (pattern_id, positions) in enumerate(step.patterns)
        }
        self._filters = [
            _row_test(step.columns, step.filters, decoder, context) if step.filters else None for step in steps
        ]
        self._bound = tuple(index for index, step in enumerate(steps) if step.bound)
        bound_columns = [steps[index].columns for index in self._bound]
        levels = guard_levels(bound_columns, guards)
        prefix_guards = {level: self._prefix_test(level, exprs, decoder, context) for level, exprs in levels.items()}
        gap_guards = {}
        for index, step in enumerate(steps):
            if step.guards:
                level = gap_guard_level(bound_columns, step.columns, step.guards)
                gap_guards[index] = (level, self._gap_test(index, level, decoder, context))
        spec = SeqSpec(tuple(SeqStep(step.bound, step.low, step.high) for step in steps))
        self._matcher = build_matcher(spec, prefix_guards=prefix_guards, gap_guards=gap_guards)
        self._keys = count(1)
        self._copy: dict[tuple[int, int], _Entry | None] = {}  # (pattern id, seq) → its timed triple
        self._copies: dict[_Entry, int] = {}  # the timed triples held → their number of copies
        # (step, subject id, t) → per event pattern of the step, the triples held there
        self._at: dict[tuple[int, int, int], list[list[tuple[int, int, int]]]] = {}
        self._events_of: dict[_Entry, list[int]] = {}  # timed triple → keys of the events it is in
        self._events: dict[int, tuple] = {}  # key → event row (the step's columns)
        self._left: dict[int, tuple] = {}  # key → row of an event that left since the last punctuation
        self.events_in = 0
        self.rejected = 0

    def _prefix_test(self, level: int, exprs: list, decoder: TermDecoder, context: dict) -> Guard:
        """The conjunction of ``exprs`` on the keys of the first ``level`` bound events."""
        columns = tuple(c for index in self._bound[:level] for c in self._steps[index].columns)
        passes = _joined_test(columns, exprs, decoder, context)
        return lambda keys: passes(self._row(keys))

    def _gap_test(self, step: int, level: int, decoder: TermDecoder, context: dict) -> GapTest:
        """The conjunction of the gap step's guards on the keys of the first ``level`` bound events
        and the key of one of its events."""
        columns = tuple(c for index in self._bound[:level] for c in self._steps[index].columns)
        passes = _joined_test((*columns, *self._steps[step].columns), self._steps[step].guards, decoder, context)
        return lambda keys, key: passes(self._row(keys) + self._event(key))

    # ------------------------------------------------------------------ feeding

    def insert(self, pattern_id: int, seq: int, ids: tuple[int, int, int], t: int) -> None:
        """Copy ``seq`` of the triple ``ids`` at time ``t`` enters the window of ``pattern_id``
        (with one dictionary reference per id, which the operator now owns)."""
        self.inputs_seen += 1
        entry = (pattern_id, ids, t)
        copies = self._copies.get(entry)
        if copies is not None:
            self._copies[entry] = copies + 1
            self._copy[(pattern_id, seq)] = entry
            self._released.append(ids)
            return
        step, slot, positions = self._slots[pattern_id]
        if _binding(positions, ids) is None:
            self.rejected += 1
            self._copy[(pattern_id, seq)] = None
            self._released.append(ids)
            return
        self._copy[(pattern_id, seq)] = entry
        self._copies[entry] = 1
        held = self._at.setdefault((step, ids[0], t), [[] for _ in self._steps[step].patterns])
        held[slot].append(ids)
        self._new_events(step, slot, ids, t, held)

    def expire(self, pattern_id: int, seq: int) -> None:
        """Copy ``seq`` leaves the window of ``pattern_id``; its triple's events leave with the last copy."""
        entry = self._copy.pop((pattern_id, seq), None)
        if entry is None:
            return
        copies = self._copies[entry] - 1
        if copies:
            self._copies[entry] = copies
            return
        del self._copies[entry]
        _pattern, ids, t = entry
        step, slot, _positions = self._slots[pattern_id]
        key = (step, ids[0], t)
        held = self._at[key]
        held[slot].remove(ids)
        if not any(held):
            del self._at[key]
        for event in self._events_of.pop(entry, ()):
            row = self._events.pop(event, None)
            if row is not None:  # already gone with another of its triples
                self._left[event] = row
                self._matcher.expire(event)
        self._released.append(ids)

    def _new_events(self, step: int, slot: int, ids: tuple, t: int, held: list[list[tuple]]) -> None:
        """The events of ``step`` at ``t`` made with the new triple ``ids`` at ``slot``."""
        spec = self._steps[step]
        choices = [[ids] if i == slot else triples for i, triples in enumerate(held)]
        passes = self._filters[step]
        for combination in product(*choices):
            binding: dict[str, int] = {}
            for (_pattern_id, positions), triple in zip(spec.patterns, combination):
                if not _merge(binding, positions, triple):
                    break
            else:
                row = tuple(binding.get(c) for c in spec.columns)
                if passes is not None and not passes(row):
                    continue
                key = next(self._keys)
                self._events[key] = row
                for (pattern_id, _positions), triple in zip(spec.patterns, combination):
                    self._events_of.setdefault((pattern_id, triple, t), []).append(key)
                self.events_in += 1
                self._matcher.insert(step, key, t)

    # ------------------------------------------------------------------ output

    def _event(self, key: int) -> tuple:
        """The row of an event, present or left since the last punctuation."""
        event = self._events.get(key)
        return self._left[key] if event is None else event

    def _row(self, keys: tuple[int, ...]) -> tuple:
        """The output row of a match: its bound events' rows in step order."""
        row: tuple = ()
        for key in keys:
            row += self._event(key)
        return row

    def on_punctuation(self, tau: int) -> None:
        self._pending.extend(Delta(self._row(keys), sign, keys) for keys, sign in self._matcher.take())
        self._left.clear()
        super().on_punctuation(tau)

    def held(self) -> Iterable[tuple]:
        return [ids for _pattern_id, ids, _t in self._copies]

    def close(self) -> None:
        super().close()
        self._copies.clear()
        self._copy.clear()

    def counters(self) -> dict[str, Any]:
        return {
            **super().counters(),
            "events": len(self._events),
            "events_in": self.events_in,
            "matches": len(self._matcher),
            "rejected": self.rejected,
        }


def guard_levels(bound_columns: Sequence[Sequence[str]], guards: Iterable[object]) -> dict[int, list]:
    """The guards by level: the number of bound steps up to the last one whose columns a guard reads
    (``bound_columns``: each bound step's, in order)."""
    level_of = _level_of(bound_columns)
    levels: dict[int, list] = {}
    for expr in guards:
        names = {x.name for x in walk(expr) if isinstance(x, Var)}
        levels.setdefault(max(level_of[name] for name in names), []).append(expr)
    return dict(sorted(levels.items()))


def gap_guard_level(bound_columns: Sequence[Sequence[str]], own: Sequence[str], guards: Iterable[object]) -> int:
    """The level of a gap step's guards: the number of bound steps up to the last one whose columns
    they read besides the gap step's ``own``."""
    level_of = _level_of(bound_columns)
    names = {x.name for expr in guards for x in walk(expr) if isinstance(x, Var)} - set(own)
    return max(level_of[name] for name in names)


def _level_of(bound_columns: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each bound column → the number of bound steps up to the one it is a column of."""
    level_of: dict[str, int] = {}
    for level, columns in enumerate(bound_columns, 1):
        for column in columns:
            level_of.setdefault(column, level)
    return level_of


def join_columns(expr: object) -> tuple[str, str] | None:
    """The two columns of ``sameTerm(?v, ?internal)``, a variable shared by two steps."""
    match expr:
        case ast.BuiltinCall("SAMETERM", (Var() as left, Var() as right)) if is_internal(left) or is_internal(right):
            return left.name, right.name
    return None


def _binding(positions: tuple, ids: tuple) -> dict[str, int] | None:
    """The columns a triple binds at ``positions``, None if a repeated column gets two terms."""
    binding: dict[str, int] = {}
    return binding if _merge(binding, positions, ids) else None


def _merge(binding: dict[str, int], positions: tuple, ids: tuple) -> bool:
    """Adds what ``ids`` binds at ``positions`` to ``binding``; False on a conflicting value."""
    return all(name is None or binding.setdefault(name, value) == value for name, value in zip(positions, ids))


def _joined_test(columns: Sequence[str], exprs: Sequence, decoder: TermDecoder, context: dict) -> Callable[[tuple], bool]:
    """The conjunction of ``exprs`` as a test on rows of ``columns``: the ids of a join's two columns
    compared, the other expressions evaluated."""
    positions = {name: i for i, name in enumerate(columns)}
    joins = [join_columns(expr) for expr in exprs]
    pairs = [(positions[a], positions[b]) for a, b in filter(None, joins)]
    rest = tuple(expr for expr, join in zip(exprs, joins) if join is None)
    passes = _row_test(columns, rest, decoder, context) if rest else None
    return lambda row: all(row[a] == row[b] for a, b in pairs) and (passes is None or passes(row))


def _row_test(columns: Sequence[str], exprs: tuple, decoder: TermDecoder, context: dict) -> Callable[[tuple], bool]:
    """The conjunction of ``exprs`` as a test on rows of ``columns``."""
    passes = compile_filter(exprs, **context)
    positions = {name: i for i, name in enumerate(columns)}
    return lambda row: passes(DecodedRow(positions, row, decoder))
