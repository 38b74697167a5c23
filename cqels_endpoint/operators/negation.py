"""FILTER NOT EXISTS, FILTER EXISTS and MINUS, maintained incrementally on both inputs.

The operator has two ports: 0 is the left input (the rows that are kept or dropped, and the
output schema), 1 the right input (the inner pattern of (NOT) EXISTS, or the right side of
MINUS). Every live left row carries a counter: the number of live right rows *matching* it.

- NOT EXISTS / EXISTS: a right row matches a left row when they agree on their shared columns
  and the optional inner ``condition`` (the FILTER of the inner group, which may read outer
  variables) is true on the merged row — evaluating the inner pattern with the left row
  substituted (SPARQL 1.1 §18.6 ``substitute``) counts exactly those rows.
- MINUS: a right row matches when it agrees with the left row on their shared columns and they
  share at least one column (§18.5: disjoint domains never remove a row).

A left row is in the output iff its counter is 0 (NOT EXISTS, MINUS) or positive (EXISTS). The
four incremental cases: a left +1 probes the right index on its key and sets its counter; a
left -1 drops the row and its matches; a right +1 probes the left index and raises the counters
of the rows it matches; a right -1 lowers exactly the counters its +1 raised (remembered by
lineage, never re-evaluated or re-scanned). Output changes are collected per left lineage and
emitted once per tick, at the punctuation, so a row that flips twice inside one tick emits
nothing. Both indexes are hashed on the ``keys``: the shared columns bound in every row of both
inputs (the planner knows which). The other shared columns may be unbound in some rows and are
checked after the probe: an unbound value is compatible with any. Kept in pure Python, like the
filter: the per-match cost is the inner condition on decoded terms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Operator

NOT_EXISTS = "not exists"
EXISTS = "exists"
MINUS = "minus"
KINDS = (NOT_EXISTS, EXISTS, MINUS)


def merged_schema(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]:
    """The columns of a left row extended with a right row: left's, then right's new ones."""
    return tuple(left) + tuple(c for c in right if c not in left)


def shared_columns(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]:
    """The columns both sides bind, in left order; internal columns (``_:b``, blank nodes of a
    stream pattern) are local to their pattern and never shared."""
    return tuple(c for c in left if c in right and not c.startswith("_:"))


class Negation(Operator):
    """Left rows kept according to how many right rows match them (see the module docstring).

    ``condition(merged_row)`` gets the left row extended with the right row (term ids aligned
    with ``merged_schema(left, right)``) and says whether they match; None means always.
    """

    arity = 2

    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        kind: str,
        condition: Callable[[tuple], bool] | None = None,
        label: str = "",
        keys: Sequence[str] | None = None,
    ) -> None:
        if kind not in KINDS:
            msg = f"unknown negation kind {kind!r}; expected one of {KINDS}"
            raise ValueError(msg)
        super().__init__(tuple(left_schema), label or kind)
        self.kind = kind
        self.right_schema = tuple(right_schema)
        self.shared = shared_columns(self.schema, self.right_schema)
        self.keys = self.shared if keys is None else tuple(keys)
        if not set(self.keys) <= set(self.shared):
            msg = f"{self.label}: keys {self.keys} are not all shared columns {self.shared}"
            raise ValueError(msg)
        self._left_key = tuple(self.schema.index(c) for c in self.keys)
        self._right_key = tuple(self.right_schema.index(c) for c in self.keys)
        # Shared columns that may be unbound: (left position, right position), checked per candidate.
        self._checked = tuple(
            (self.schema.index(c), self.right_schema.index(c)) for c in self.shared if c not in self.keys
        )
        # Right columns appended to a left row to form the merged row the condition reads.
        self._right_extra = tuple(i for i, c in enumerate(self.right_schema) if c not in self.schema)
        self._condition = condition
        # MINUS between inputs sharing no column never removes anything (§18.5).
        self._inert = kind == MINUS and not self.shared
        # MINUS needs one shared column bound on both sides; a bound key column guarantees it.
        self._needs_common = kind == MINUS and not self.keys
        self._left: dict[tuple, list] = {}  # lineage → [row, key, matching right lineages]
        self._left_index: dict[tuple, dict[tuple, None]] = {}  # key → left lineages
        self._right: dict[tuple, tuple[tuple, tuple]] = {}  # lineage → (row, key)
        self._right_index: dict[tuple, dict[tuple, None]] = {}  # key → right lineages
        self._matched: dict[tuple, dict[tuple, None]] = {}  # right lineage → left lineages it matches
        self._emitted: set[tuple] = set()  # left lineages currently in the output
        self._dirty: dict[tuple, tuple] = {}  # left lineage → row, whose output may change this tick
        self.inputs_per_port = [0, 0]
        self.evaluations = 0

    # ---- helpers -------------------------------------------------------------------------------

    def _key(self, row: tuple, positions: tuple[int, ...]) -> tuple:
        key = tuple(row[i] for i in positions)
        if None in key:
            msg = f"{self.label}: a shared column is unbound in {row}; the planner must refuse this input"
            raise OperatorError(msg)
        return key

    def _matches(self, left_row: tuple, right_row: tuple) -> bool:
        common = False
        merged = left_row
        for left_position, right_position in self._checked:
            left_value, right_value = left_row[left_position], right_row[right_position]
            if left_value is None:
                if right_value is not None and self._condition is not None:
                    # The inner FILTER reads the value the inner pattern bound (substitution left it free).
                    merged = merged[:left_position] + (right_value,) + merged[left_position + 1 :]
            elif right_value is not None:
                if left_value != right_value:
                    return False
                common = True
        if self._needs_common and not common:
            return False
        if self._condition is None:
            return True
        self.evaluations += 1
        return bool(self._condition(merged + tuple(right_row[i] for i in self._right_extra)))

    # ---- the four cases ------------------------------------------------------------------------

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        if port == 0:
            for row, sign, lineage in deltas:
                self._left_insert(row, lineage) if sign > 0 else self._left_expire(lineage)
        elif not self._inert:
            for row, sign, lineage in deltas:
                self._right_insert(row, lineage) if sign > 0 else self._right_expire(lineage)

    def _left_insert(self, row: tuple, lineage: tuple) -> None:
        if lineage in self._left:
            msg = f"{self.label}: lineage {lineage} entered the left input twice"
            raise OperatorError(msg)
        key = self._key(row, self._left_key)
        matching: dict[tuple, None] = {}
        if not self._inert:
            right = self._right
            for right_lineage in self._right_index.get(key, ()):
                if self._matches(row, right[right_lineage][0]):
                    matching[right_lineage] = None
                    self._matched[right_lineage][lineage] = None
        self._left[lineage] = [row, key, matching]
        self._left_index.setdefault(key, {})[lineage] = None
        self._dirty[lineage] = row

    def _left_expire(self, lineage: tuple) -> None:
        entry = self._left.pop(lineage, None)
        if entry is None:
            msg = f"{self.label}: lineage {lineage} left the left input without entering it"
            raise OperatorError(msg)
        row, key, matching = entry
        bucket = self._left_index[key]
        del bucket[lineage]
        if not bucket:
            del self._left_index[key]
        for right_lineage in matching:
            del self._matched[right_lineage][lineage]
        self._dirty[lineage] = row

    def _right_insert(self, row: tuple, lineage: tuple) -> None:
        if lineage in self._right:
            msg = f"{self.label}: lineage {lineage} entered the right input twice"
            raise OperatorError(msg)
        key = self._key(row, self._right_key)
        self._right[lineage] = (row, key)
        self._right_index.setdefault(key, {})[lineage] = None
        matched: dict[tuple, None] = {}
        for left_lineage in self._left_index.get(key, ()):
            entry = self._left[left_lineage]
            if self._matches(entry[0], row):
                entry[2][lineage] = None
                matched[left_lineage] = None
                self._dirty[left_lineage] = entry[0]
        self._matched[lineage] = matched

    def _right_expire(self, lineage: tuple) -> None:
        found = self._right.pop(lineage, None)
        if found is None:
            msg = f"{self.label}: lineage {lineage} left the right input without entering it"
            raise OperatorError(msg)
        bucket = self._right_index[found[1]]
        del bucket[lineage]
        if not bucket:
            del self._right_index[found[1]]
        for left_lineage in self._matched.pop(lineage):
            entry = self._left[left_lineage]
            del entry[2][lineage]
            self._dirty[left_lineage] = entry[0]

    # ---- output, once per tick -------------------------------------------------------------------

    def on_tick_end(self, tau: int) -> None:
        dirty, self._dirty = self._dirty, {}
        wanted_matches = self.kind == EXISTS
        out: list[Delta] = []
        for lineage, row in dirty.items():
            entry = self._left.get(lineage)
            keep = entry is not None and bool(entry[2]) == wanted_matches
            if keep and lineage not in self._emitted:
                self._emitted.add(lineage)
                out.append(Delta(row, 1, lineage))
            elif not keep and lineage in self._emitted:
                self._emitted.remove(lineage)
                out.append(Delta(row, -1, lineage))
        self.emit(out)

    def counters(self) -> dict[str, Any]:
        return {
            **super().counters(),
            "left": len(self._left),
            "right": len(self._right),
            "kept": len(self._emitted),
            "evaluations": self.evaluations,
        }
