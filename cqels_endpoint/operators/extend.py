"""BIND (algebra Extend) over rows of term ids, with SPARQL 1.1 expression semantics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.errors import PlanError
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression
from cqels_endpoint.terms import Var


class Extend(Operator):
    """Appends ``variable`` = the expression's value to every row; an expression error leaves it
    unbound (None).

    The value is computed once, when the row enters, encoded (taking one dictionary reference) and
    remembered by lineage; the row's -1 carries the same value without evaluating again, so even
    RAND()/BNODE()/NOW() retract exactly what they added. The reference is released when the
    following tick punctuates, once the evaluator has decoded the -1 rows of the tick they left in.
    ``BIND(?x AS ?y)`` (the planner's copy of an aggregate or a GROUP BY key into its name) copies
    the id, taking one reference, without decoding or encoding anything.
    Pure Python for the same reason as :class:`~cqels_endpoint.operators.filter.Filter`.
    """

    def __init__(
        self,
        input_schema: Sequence[str],
        variable: str,
        expression: object,
        decoder: TermDecoder,
        label: str = "",
        **context: Any,
    ) -> None:
        if variable in input_schema:
            msg = f"BIND assigns ?{variable}, which is already bound in its group: use another variable"
            raise PlanError(msg)
        super().__init__((*input_schema, variable), label or "extend")
        self._compute = compile_expression(expression, **context)
        self._positions = {name: position for position, name in enumerate(input_schema)}
        self._copied = self._positions.get(expression.name) if isinstance(expression, Var) else None
        self._decoder = decoder
        self._dictionary = decoder.dictionary
        self._values: dict[tuple, int | None] = {}
        self._to_release: list[int] = []
        self._releasing: list[int] = []
        self.errors = 0

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        values, positions, decoder, copied = self._values, self._positions, self._decoder, self._copied
        out: list[Delta] = []
        for row, sign, lineage in deltas:
            if sign > 0 and copied is not None:
                value = row[copied]
                if value is None:
                    self.errors += 1  # an unbound variable is an error, as the expression says
                else:
                    self._dictionary.incref(value)
                values[lineage] = value
            elif sign > 0:
                try:
                    term = self._compute(DecodedRow(positions, row, decoder))
                except ExpressionError:
                    self.errors += 1
                    value = None
                else:
                    value = self._dictionary.encode(term)
                values[lineage] = value
            else:
                value = values.pop(lineage)
                if value is not None:
                    self._to_release.append(value)
            out.append(Delta((*row, value), sign, lineage))
        self.emit(out)

    def on_tick_end(self, tau: int) -> None:
        # Release what left two ticks ago: the last tick's -1 rows may still be decoded.
        self._dictionary.decref_many(self._releasing)
        self._releasing, self._to_release = self._to_release, []

    def close(self) -> None:
        """Drop every reference this operator holds (the query is unregistered)."""
        self._dictionary.decref_many(self._releasing)
        self._dictionary.decref_many(self._to_release)
        self._dictionary.decref_many(value for value in self._values.values() if value is not None)
        self._releasing, self._to_release, self._values = [], [], {}

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "errors": self.errors, "live": len(self._values)}
