"""OPTIONAL (SPARQL 1.1 §18.5 LeftJoin with its filter), incremental on both inputs: the
pure-Python twin of ``operators/_optional.pyx``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.shared.optional import JOINED, PADDED
from cqels_endpoint.operators.shared.schemas import union_schema
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.expressions import compile_filter


class OptionalJoin(Operator):
    """``LeftJoin(left, right, exprs)``: port 0 is the left (required) input, port 1 the optional one.

    A left row and a right row *match* when they are compatible (no shared column bound to two
    different terms; unbound is compatible with anything) and the conjunction ``exprs`` is true on
    their merge (an error is false). A left row with matches yields one joined row per match; a
    left row without any yields itself, padded with unbound right columns. Deltas keep that true
    at every moment:

    - a left +1 emits its joined rows, or its padded row;
    - a right +1 emits +joined for each left row it matches, preceded by -padded for a left row
      that had no match before;
    - a right -1 emits -joined for each match it had, followed by +padded for a left row left
      without match; a left -1 retracts whatever its row produced.

    Matches are remembered (left lineage ↔ right lineages) when they form, so a retraction is a
    lookup: nothing is re-joined and the filter is never evaluated again. Rows are indexed on the
    shared columns; a row with a shared column unbound goes to a small list checked on every probe.
    """

    arity = 2

    def __init__(
        self,
        left_schema: Sequence[str],
        right_schema: Sequence[str],
        exprs: Sequence[object] = (),
        decoder: TermDecoder | None = None,
        label: str = "",
        **context: Any,
    ) -> None:
        super().__init__(union_schema(left_schema, right_schema), label or "optional")
        self.left_schema, self.right_schema = tuple(left_schema), tuple(right_schema)
        if exprs and decoder is None:
            raise ValueError("an OPTIONAL with a filter needs a decoder")
        self._passes = compile_filter(tuple(exprs), **context) if exprs else None
        self._decoder = decoder
        self._names = {name: i for i, name in enumerate(self.schema)}
        shared = [name for name in self.left_schema if name in self.right_schema]
        self._keys = (
            tuple(self.left_schema.index(name) for name in shared),
            tuple(self.right_schema.index(name) for name in shared),
        )
        self._positions = (
            tuple(range(len(self.left_schema))),
            tuple(self.schema.index(name) for name in self.right_schema),
        )
        self._rows: tuple[dict, dict] = ({}, {})  # per side: lineage → row
        self._index: tuple[dict, dict] = ({}, {})  # per side: key → {lineage: None}
        self._loose: tuple[dict, dict] = ({}, {})  # per side: lineages whose key has an unbound column
        # Matches, both ways: left lineage → {right lineage: joined row}, right lineage → {left lineage}.
        self._matches: dict[tuple, dict[tuple, tuple]] = {}
        self._matched_by: dict[tuple, dict[tuple, None]] = {}
        self.inputs_per_port = [0, 0]
        self.rejected = 0

    # ---- state ----------------------------------------------------------------------------------

    def _key(self, side: int, row: tuple) -> tuple | None:
        key = tuple(row[i] for i in self._keys[side])
        return None if None in key else key

    def _store(self, side: int, row: tuple, lineage: tuple) -> None:
        rows = self._rows[side]
        if lineage in rows:
            raise OperatorError(f"{self.label}: lineage {lineage} entered input {side} twice")
        rows[lineage] = row
        key = self._key(side, row)
        if key is None:
            self._loose[side][lineage] = None
        else:
            self._index[side].setdefault(key, {})[lineage] = None

    def _drop(self, side: int, lineage: tuple) -> tuple:
        row = self._rows[side].pop(lineage, None)
        if row is None:
            raise OperatorError(f"{self.label}: lineage {lineage} left input {side} without having entered it")
        key = self._key(side, row)
        if key is None:
            del self._loose[side][lineage]
        else:
            bucket = self._index[side][key]
            del bucket[lineage]
            if not bucket:
                del self._index[side][key]
        return row

    def _candidates(self, side: int, row: tuple) -> list[tuple]:
        """Lineages of the ``side`` rows that may be compatible with ``row`` of the other side."""
        other = 1 - side
        key = tuple(row[i] for i in self._keys[other])
        found: list[tuple] = list(self._loose[side])
        if None in key:
            # A probe with an unbound shared column cannot use the hash index.
            found.extend(self._rows[side])
            return list(dict.fromkeys(found))
        found.extend(self._index[side].get(key, ()))
        return found

    def _merge(self, left: tuple, right: tuple) -> tuple | None:
        """The merged output row, or None when incompatible or rejected by the filter."""
        merged = list(left) + [None] * (len(self.schema) - len(left))
        for column, position in enumerate(self._positions[1]):
            value = right[column]
            if value is None:
                continue
            bound = merged[position]
            if bound is None:
                merged[position] = value
            elif bound != value:
                return None
        row = tuple(merged)
        if self._passes is not None and not self._passes(DecodedRow(self._names, row, self._decoder)):
            self.rejected += 1
            return None
        return row

    def _padded(self, left: tuple) -> tuple:
        return tuple(left) + (None,) * (len(self.schema) - len(left))

    # ---- deltas ---------------------------------------------------------------------------------

    def _left_insert(self, row: tuple, lineage: tuple, out: list[Delta]) -> None:
        self._store(0, row, lineage)
        matches: dict[tuple, tuple] = {}
        for right_lineage in self._candidates(1, row):
            joined = self._merge(row, self._rows[1][right_lineage])
            if joined is not None:
                matches[right_lineage] = joined
                self._matched_by[right_lineage][lineage] = None
                out.append(Delta(joined, 1, (JOINED, *lineage, *right_lineage)))
        self._matches[lineage] = matches
        if not matches:
            out.append(Delta(self._padded(row), 1, (PADDED, *lineage)))

    def _left_delete(self, lineage: tuple, out: list[Delta]) -> None:
        row = self._drop(0, lineage)
        matches = self._matches.pop(lineage)
        if not matches:
            out.append(Delta(self._padded(row), -1, (PADDED, *lineage)))
            return
        for right_lineage, joined in matches.items():
            del self._matched_by[right_lineage][lineage]
            out.append(Delta(joined, -1, (JOINED, *lineage, *right_lineage)))

    def _right_insert(self, row: tuple, lineage: tuple, out: list[Delta]) -> None:
        self._store(1, row, lineage)
        matched: dict[tuple, None] = {}
        self._matched_by[lineage] = matched
        for left_lineage in self._candidates(0, row):
            left = self._rows[0][left_lineage]
            joined = self._merge(left, row)
            if joined is None:
                continue
            matches = self._matches[left_lineage]
            if not matches:
                out.append(Delta(self._padded(left), -1, (PADDED, *left_lineage)))
            matches[lineage] = joined
            matched[left_lineage] = None
            out.append(Delta(joined, 1, (JOINED, *left_lineage, *lineage)))

    def _right_delete(self, lineage: tuple, out: list[Delta]) -> None:
        self._drop(1, lineage)
        for left_lineage in self._matched_by.pop(lineage):
            matches = self._matches[left_lineage]
            joined = matches.pop(lineage)
            out.append(Delta(joined, -1, (JOINED, *left_lineage, *lineage)))
            if not matches:
                out.append(Delta(self._padded(self._rows[0][left_lineage]), 1, (PADDED, *left_lineage)))

    def on_batch(self, port: int, deltas: list[Delta]) -> None:
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        out: list[Delta] = []
        if port == 0:
            for row, sign, lineage in deltas:
                if sign > 0:
                    self._left_insert(row, lineage, out)
                else:
                    self._left_delete(lineage, out)
        else:
            for row, sign, lineage in deltas:
                if sign > 0:
                    self._right_insert(row, lineage, out)
                else:
                    self._right_delete(lineage, out)
        self.emit(out)

    def counters(self) -> dict[str, Any]:
        unmatched = sum(1 for matches in self._matches.values() if not matches)
        return {
            **super().counters(),
            "inputs_per_port": list(self.inputs_per_port),
            "sizes": [len(self._rows[0]), len(self._rows[1])],
            "unmatched_left": unmatched,
            "rejected": self.rejected,
        }
