"""Aggregation (algebra ``Group``): what the compiled operator (``operators/_aggregate.pyx``) and
its twin (``operators/reference/aggregate.py``) share.

Each arriving row is evaluated once: its group key (the GROUP BY expressions; an error or an
unbound variable makes that key component unbound) and one argument per aggregate (a term, or
None for an error/unbound value; ``COUNT(*)`` takes the row itself). Both are remembered by
lineage, so the row's -1 updates the same group with the same values without evaluating again.

Emission (the punctuation contract of ``operators.base``): rows are held back until the tick's
punctuation; then every group that changed in the tick retracts the row it emitted before (-1) and
emits its new row (+1) — nothing when the row is unchanged; a group whose last row left only
retracts. The output lineage of a group is ``(serial,)``, a number given to the group when it first
emits, so a row's -1 carries its +1's lineage. Without GROUP BY the single group exists even when
empty (``COUNT(*)`` = 0, as SPARQL says), and emits at the first punctuation.

The operator encodes the terms of its output rows itself (one dictionary reference per id) and
releases a retracted row's ids when the following tick punctuates, as ``Extend`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.aggregates import AGGREGATES
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression


class AggregateSpec:
    """One compiled aggregate: its name, DISTINCT, separator and argument (None for ``COUNT(*)``)."""

    __slots__ = ("argument", "distinct", "name", "ordered", "separator", "star")

    def __init__(self, aggregate: ast.Aggregate, **context: Any) -> None:
        if aggregate.name not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate.name}")
        self.name = aggregate.name
        self.distinct = aggregate.distinct
        self.separator = aggregate.separator
        self.star = aggregate.expr is None
        self.argument = None if self.star else compile_expression(aggregate.expr, **context)
        # COUNT needs the counts only; the others read the values in order.
        self.ordered = self.name != "COUNT"


class GroupAggregateBase(Operator):
    """What both aggregation operators share: evaluating keys and arguments once per row, the
    per-tick emission of changed groups and the dictionary references of the output rows.

    Subclasses keep the groups: ``_add``/``_remove`` a row's arguments to/from a group and
    ``_result(key)``, the aggregate terms of a group, or None once the group is empty.
    """

    def __init__(
        self,
        input_schema: Sequence[str],
        keys: Sequence[tuple[str | None, object]],
        aggregates: Sequence[tuple[str, ast.Aggregate]],
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None:
        named = tuple(name for name, _expr in keys if name is not None)
        super().__init__((*named, *(name for name, _ in aggregates)), label or "group")
        self._positions = {name: position for position, name in enumerate(input_schema)}
        self._keys = [compile_expression(expr, **context) for _name, expr in keys]
        self._named = [position for position, (name, _expr) in enumerate(keys) if name is not None]
        self._specs = [AggregateSpec(aggregate, **context) for _name, aggregate in aggregates]
        self._decoder = decoder
        self._dictionary = decoder.dictionary
        self._rows: dict[tuple, tuple] = {}  # input lineage -> (group key, arguments)
        self._changed: dict[tuple, None] = {}  # group keys changed this tick, in order
        self._emitted: dict[tuple, tuple] = {}  # group key -> (output row of ids, output lineage)
        self._serial = 0
        self._to_release: list[int] = []
        self._releasing: list[int] = []
        self.errors = 0
        # Without GROUP BY there is exactly one group, present even over no rows.
        self._implicit: tuple | None = () if not keys else None
        if self._implicit is not None:
            self._changed[()] = None

    # ------------------------------------------------------------------ input

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        rows, changed = self._rows, self._changed
        for row, sign, lineage in deltas:
            if sign > 0:
                key, arguments = self._evaluate(row)
                rows[lineage] = (key, arguments)
                self._add(key, arguments, lineage)
            else:
                key, arguments = rows.pop(lineage)
                self._remove(key, arguments, lineage)
            changed[key] = None

    def _evaluate(self, row: tuple) -> tuple[tuple, tuple]:
        mapping = DecodedRow(self._positions, row, self._decoder)
        key = []
        for compute in self._keys:
            try:
                key.append(compute(mapping))
            except ExpressionError:
                key.append(None)
        arguments = []
        for spec in self._specs:
            if spec.star:
                arguments.append(row)
                continue
            try:
                arguments.append(spec.argument(mapping))
            except ExpressionError:
                self.errors += 1
                arguments.append(None)
        return tuple(key), tuple(arguments)

    def _add(self, key: tuple, arguments: tuple, lineage: tuple) -> None:
        raise NotImplementedError

    def _remove(self, key: tuple, arguments: tuple, lineage: tuple) -> None:
        raise NotImplementedError

    def _result(self, key: tuple) -> tuple | None:
        raise NotImplementedError

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

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "groups": len(self._emitted), "errors": self.errors}
