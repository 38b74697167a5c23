"""Reference twin of the compiled EXISTS mark (``operators/_mark.pyx``), computed by re-evaluation.

The reference negation's definition (every (left, right) pair tested at every punctuation) with
every left row kept and the truth of the (NOT) EXISTS appended: the output is recomputed and its
difference with the previous tick emitted, so a row whose mark flipped leaves with the old mark and
comes back with the new one under its lineage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cqels_endpoint.operators.reference.negation import Negation
from cqels_endpoint.operators.shared.mark import FALSE_ID, TRUE_ID, marked_schema
from cqels_endpoint.plan.nodes import NegationKind


class Mark(Negation):
    """Every left row with the value of ``kind`` (EXISTS or NOT EXISTS) appended as ``column``."""

    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: NegationKind | str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
        column: str = "",
    ) -> None:
        super().__init__(left_schema, right_schema, kind, condition, label, keys)
        # The matching reads the left columns by position in ``self.schema``: the mark comes last.
        self.schema = marked_schema(self, column)

    def _output_row(self, row: tuple, matched: bool) -> tuple:
        return (*row, TRUE_ID if matched == (self.kind is NegationKind.EXISTS) else FALSE_ID)
