"""Aggregation (algebra ``Group``): what the compiled operator (``operators/_aggregate.pyx``) and
its twin (``operators/reference/aggregate.py``) share, and the contract both implement.

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

Shared here: compiling the specs, evaluating a row's key and arguments (``_evaluate``) and the
counters. Each side keeps its own groups and runs its own per-tick loop (``on_batch``,
``on_tick_end``, ``close``): the twin recomputes a changed group from its members, the compiled
operator keeps every aggregate up to date per delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.operators.base import Operator
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.aggregates import AGGREGATES
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression
from cqels_endpoint.terms import Var


class AggregateSpec:
    """One compiled aggregate: its name, DISTINCT, separator and argument (None for ``COUNT(*)``),
    and ``variable``, the argument's name when it is a plain variable."""

    __slots__ = ("argument", "distinct", "name", "separator", "star", "variable")

    def __init__(self, aggregate: ast.Aggregate, **context: Any) -> None:
        if aggregate.name not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate.name}")
        self.name = aggregate.name
        self.distinct = aggregate.distinct
        self.separator = aggregate.separator
        self.star = aggregate.expr is None
        self.argument = None if self.star else compile_expression(aggregate.expr, **context)
        self.variable = aggregate.expr.name if isinstance(aggregate.expr, Var) else None


class GroupAggregateBase(Operator):
    """What both aggregation operators share: the specs, evaluating keys and arguments once per
    row (``_evaluate``) and the counters. Subclasses keep the groups, implement ``on_batch``,
    ``on_tick_end`` and ``close`` as the module docstring says, and count their emitted groups
    (``_groups_emitted``)."""

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
        self.errors = 0
        # Without GROUP BY there is exactly one group, present even over no rows.
        self._implicit: tuple | None = () if not keys else None

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

    def _groups_emitted(self) -> int:
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "groups": self._groups_emitted(), "errors": self.errors}
