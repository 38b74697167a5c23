"""What both negation operators check and keep (the compiled ``_negation`` and its twin)."""

from __future__ import annotations

from collections.abc import Sequence

from cqels_endpoint.operators.base import Operator
from cqels_endpoint.plan.nodes import NegationKind, shared_columns


class NegationBase(Operator):
    """The kind (a ``NegationKind``, or its value), the right schema, the shared columns and the
    hash ``keys`` among them (all shared columns unless told)."""

    arity = 2

    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: NegationKind | str,
        label: str,
        keys: Sequence[str] | None,
    ) -> None:
        try:
            kind = NegationKind(kind)
        except ValueError:
            msg = f"unknown negation kind {kind!r}; expected one of {tuple(k.value for k in NegationKind)}"
            raise ValueError(msg) from None
        super().__init__(tuple(left_schema), label or kind.value)
        self.kind = kind
        self.right_schema = tuple(right_schema)
        self.shared = shared_columns(self.schema, self.right_schema)
        self.keys = self.shared if keys is None else tuple(keys)
        if not set(self.keys) <= set(self.shared):
            msg = f"{self.label}: keys {self.keys} are not all shared columns {self.shared}"
            raise ValueError(msg)
