"""Aggregation by recomputation: the twin of the compiled ``operators/_aggregate.pyx``.

The twin keeps, per group, the multiset of its input rows' arguments (by lineage) and, at
punctuation, recomputes every aggregate of every changed group from that multiset — sorting the
values from scratch and folding them with ``runtime.aggregates.finish`` — instead of keeping each
aggregate up to date per delta. Key and argument evaluation are those of
``shared.aggregate.GroupAggregateBase``, and the per-tick loop below is the contract that module
states (emission, lineages, dictionary references); the compiled operator runs its own copy of
that loop in Cython. The property tests compare the two after every tick.
"""

from __future__ import annotations

from typing import Any

from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.aggregate import GroupAggregateBase
from cqels_endpoint.runtime.aggregates import finish, value_key
from cqels_endpoint.runtime.functions import integer_literal


class GroupAggregate(GroupAggregateBase):
    """Aggregation by recomputation of the changed groups (the twin of the incremental operator)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._members: dict[tuple, dict[tuple, tuple]] = {}  # key -> {lineage: arguments}
        self._rows: dict[tuple, tuple] = {}  # input lineage -> (group key, arguments)
        self._changed: dict[tuple, None] = {}  # group keys changed this tick, in order
        self._emitted: dict[tuple, tuple] = {}  # group key -> (output row of ids, output lineage)
        self._serial = 0
        self._to_release: list[int] = []
        self._releasing: list[int] = []
        if self._implicit is not None:
            self._members[()] = {}
            self._changed[()] = None

    # ------------------------------------------------------------------ input

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        rows, changed, members = self._rows, self._changed, self._members
        for row, sign, lineage in deltas:
            if sign > 0:
                key, arguments = self._evaluate(row)
                rows[lineage] = (key, arguments)
                members.setdefault(key, {})[lineage] = arguments
            else:
                key, _arguments = rows.pop(lineage)
                del members[key][lineage]
            changed[key] = None

    def _result(self, key: tuple) -> tuple | None:
        """The aggregate terms of group ``key``, or None once it is empty (and then forgotten)."""
        members = self._members.get(key)
        if members is None:
            return None
        if not members and key != self._implicit:
            del self._members[key]
            return None
        results = []
        for position, spec in enumerate(self._specs):
            arguments = [row[position] for row in members.values()]
            values = [value for value in arguments if value is not None]
            errors = len(arguments) - len(values)
            if spec.distinct:
                values = list(set(values))
            if spec.name == "COUNT":
                results.append(integer_literal(len(values)))
            else:
                values.sort(key=value_key)
                results.append(finish(spec.name, values, errors, spec.separator))
        return tuple(results)

    # ------------------------------------------------------------------ output

    def on_tick_end(self, tau: int) -> None:
        encode, dictionary = self._dictionary.encode, self._dictionary
        # Release what left two ticks ago: the last tick's -1 rows may still be decoded.
        dictionary.decref_many(self._releasing)
        self._releasing = []
        out: list[Delta] = []
        for key in self._changed:
            results = self._result(key)
            previous = self._emitted.get(key)
            if results is None:
                if previous is not None:
                    del self._emitted[key]
                    out.append(Delta(previous[0], -1, previous[1]))
                    self._release(previous[0])
                continue
            terms = (*(key[position] for position in self._named), *results)
            row = tuple(None if term is None else encode(term) for term in terms)
            if previous is not None and previous[0] == row:
                self._release_now(row)
                continue
            if previous is None:
                self._serial += 1
                lineage = (self._serial,)
            else:
                lineage = previous[1]
                out.append(Delta(previous[0], -1, lineage))
                self._release(previous[0])
            self._emitted[key] = (row, lineage)
            out.append(Delta(row, 1, lineage))
        self._changed = {}
        self._releasing, self._to_release = self._to_release, []
        self.emit(out)

    def _release(self, row: tuple) -> None:
        self._to_release.extend(term_id for term_id in row if term_id is not None)

    def _release_now(self, row: tuple) -> None:
        self._dictionary.decref_many(term_id for term_id in row if term_id is not None)

    def close(self) -> None:
        """Drop every reference this operator holds (the query is unregistered)."""
        self._dictionary.decref_many(self._releasing)
        self._dictionary.decref_many(self._to_release)
        for row, _lineage in self._emitted.values():
            self._release_now(row)
        self._releasing, self._to_release, self._emitted = [], [], {}

    def _groups_emitted(self) -> int:
        return len(self._emitted)
