# distutils: language = c++
"""Compiled OPTIONAL (LeftJoin with its filter): the twin of ``reference/optional.py``, same output
rows, lineages, order and counters; read the reference for the semantics. The state lives in
:class:`_OptionalCore` (a cdef class; lineages and keys are tuples, so the indexes and the match
maps stay Python dicts), the column positions in C vectors and the row merge is a C loop. A
filtered OPTIONAL still pays its filter on decoded terms per candidate pair.
"""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.errors import OperatorError
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import DecodedRow
from cqels_endpoint.operators.shared.optional import JOINED, PADDED
from cqels_endpoint.operators.shared.schemas import union_schema
from cqels_endpoint.runtime.expressions import compile_filter

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _OptionalCore:
    def __init__(self, owner, tuple schema, tuple left_schema, tuple right_schema, passes, decoder):
        cdef vector[int] left_keys, right_keys
        self.owner = owner
        self.width = len(schema)
        self.left_width = len(left_schema)
        for name in left_schema:
            if name in right_schema:
                left_keys.push_back(left_schema.index(name))
                right_keys.push_back(right_schema.index(name))
        self.keys.push_back(left_keys)
        self.keys.push_back(right_keys)
        for name in right_schema:
            self.right_positions.push_back(schema.index(name))
        self.passes = passes
        self.decoder = decoder
        self.names = {name: i for i, name in enumerate(schema)}
        self.rows = ({}, {})
        self.index = ({}, {})
        self.loose = ({}, {})
        self.matches = {}
        self.matched_by = {}
        self.rejected = 0

    cdef tuple _key(self, int side, tuple row):
        """``row``'s key on the shared columns, or None when one of them is unbound."""
        cdef vector[int]* positions = &self.keys[side]
        cdef size_t k
        cdef list key = []
        for k in range(positions.size()):
            value = row[positions[0][k]]
            if value is None:
                return None
            key.append(value)
        return tuple(key)

    cdef int _store(self, int side, tuple row, object lineage) except -1:
        cdef dict rows = <dict>self.rows[side]
        cdef dict bucket
        if lineage in rows:
            raise OperatorError(f"{self.owner.label}: lineage {lineage} entered input {side} twice")
        rows[lineage] = row
        key = self._key(side, row)
        if key is None:
            (<dict>self.loose[side])[lineage] = None
        else:
            bucket = (<dict>self.index[side]).get(key)
            if bucket is None:
                bucket = (<dict>self.index[side])[key] = {}
            bucket[lineage] = None
        return 0

    cdef tuple _drop(self, int side, object lineage):
        cdef tuple row = (<dict>self.rows[side]).pop(lineage, None)
        cdef dict bucket
        if row is None:
            raise OperatorError(f"{self.owner.label}: lineage {lineage} left input {side} without having entered it")
        key = self._key(side, row)
        if key is None:
            del (<dict>self.loose[side])[lineage]
        else:
            bucket = <dict>(<dict>self.index[side])[key]
            del bucket[lineage]
            if not bucket:
                del (<dict>self.index[side])[key]
        return row

    cdef list _candidates(self, int side, tuple row):
        """Lineages of the ``side`` rows that may be compatible with ``row`` of the other side."""
        key = self._key(1 - side, row)
        cdef list found = list(<dict>self.loose[side])
        if key is None:
            # A probe with an unbound shared column cannot use the hash index.
            found.extend(<dict>self.rows[side])
            return list(dict.fromkeys(found))
        found.extend((<dict>self.index[side]).get(key, ()))
        return found

    cdef tuple _merge(self, tuple left, tuple right):
        """The merged output row, or None when incompatible or rejected by the filter."""
        cdef list merged = list(left) + [None] * (self.width - self.left_width)
        cdef size_t column
        cdef int position
        for column in range(self.right_positions.size()):
            value = right[column]
            if value is None:
                continue
            position = self.right_positions[column]
            bound = merged[position]
            if bound is None:
                merged[position] = value
            elif bound != value:
                return None
        cdef tuple row = tuple(merged)
        if self.passes is not None and not self.passes(DecodedRow(self.names, row, self.decoder)):
            self.rejected += 1
            return None
        return row

    cdef tuple _padded(self, tuple left):
        return left + (None,) * (self.width - self.left_width)

    cdef int left_insert(self, tuple row, object lineage, list out) except -1:
        cdef dict matches = {}
        cdef dict right_rows = <dict>self.rows[1]
        cdef tuple joined
        self._store(0, row, lineage)
        for right_lineage in self._candidates(1, row):
            joined = self._merge(row, <tuple>right_rows[right_lineage])
            if joined is not None:
                matches[right_lineage] = joined
                (<dict>self.matched_by[right_lineage])[lineage] = None
                out.append(_new_tuple(Delta, (joined, 1, (JOINED,) + lineage + right_lineage)))
        self.matches[lineage] = matches
        if not matches:
            out.append(_new_tuple(Delta, (self._padded(row), 1, (PADDED,) + lineage)))
        return 0

    cdef int left_delete(self, object lineage, list out) except -1:
        cdef tuple row = self._drop(0, lineage)
        cdef dict matches = <dict>self.matches.pop(lineage)
        if not matches:
            out.append(_new_tuple(Delta, (self._padded(row), -1, (PADDED,) + lineage)))
            return 0
        for right_lineage, joined in matches.items():
            del (<dict>self.matched_by[right_lineage])[lineage]
            out.append(_new_tuple(Delta, (joined, -1, (JOINED,) + lineage + right_lineage)))
        return 0

    cdef int right_insert(self, tuple row, object lineage, list out) except -1:
        cdef dict matched = {}
        cdef dict left_rows = <dict>self.rows[0]
        cdef dict matches
        cdef tuple left, joined
        self._store(1, row, lineage)
        self.matched_by[lineage] = matched
        for left_lineage in self._candidates(0, row):
            left = <tuple>left_rows[left_lineage]
            joined = self._merge(left, row)
            if joined is None:
                continue
            matches = <dict>self.matches[left_lineage]
            if not matches:
                out.append(_new_tuple(Delta, (self._padded(left), -1, (PADDED,) + left_lineage)))
            matches[lineage] = joined
            matched[left_lineage] = None
            out.append(_new_tuple(Delta, (joined, 1, (JOINED,) + left_lineage + lineage)))
        return 0

    cdef int right_delete(self, object lineage, list out) except -1:
        cdef dict matches
        self._drop(1, lineage)
        for left_lineage in <dict>self.matched_by.pop(lineage):
            matches = <dict>self.matches[left_lineage]
            joined = matches.pop(lineage)
            out.append(_new_tuple(Delta, (joined, -1, (JOINED,) + left_lineage + lineage)))
            if not matches:
                out.append(
                    _new_tuple(Delta, (self._padded(<tuple>(<dict>self.rows[0])[left_lineage]), 1, (PADDED,) + left_lineage))
                )
        return 0

    def sizes(self):
        return [len(self.rows[0]), len(self.rows[1])]

    def unmatched(self):
        return sum(1 for matches in self.matches.values() if not matches)


class OptionalJoin(Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.optional.OptionalJoin`."""

    arity = 2

    def __init__(self, left_schema, right_schema, exprs=(), decoder=None, label="", **context):
        super().__init__(union_schema(left_schema, right_schema), label or "optional")
        self.left_schema, self.right_schema = tuple(left_schema), tuple(right_schema)
        if exprs and decoder is None:
            raise ValueError("an OPTIONAL with a filter needs a decoder")
        passes = compile_filter(tuple(exprs), **context) if exprs else None
        self._core = _OptionalCore(self, self.schema, self.left_schema, self.right_schema, passes, decoder)
        self.inputs_per_port = [0, 0]

    def on_batch(self, int port, list deltas):
        cdef _OptionalCore core = <_OptionalCore>self._core
        cdef list out = []
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        if port == 0:
            for row, sign, lineage in deltas:
                if sign > 0:
                    core.left_insert(tuple(row), tuple(lineage), out)
                else:
                    core.left_delete(tuple(lineage), out)
        else:
            for row, sign, lineage in deltas:
                if sign > 0:
                    core.right_insert(tuple(row), tuple(lineage), out)
                else:
                    core.right_delete(tuple(lineage), out)
        self.emit(out)

    @property
    def rejected(self):
        return (<_OptionalCore>self._core).rejected

    def counters(self):
        core = <_OptionalCore>self._core
        return {
            **Operator.counters(self),
            "inputs_per_port": list(self.inputs_per_port),
            "sizes": core.sizes(),
            "unmatched_left": core.unmatched(),
            "rejected": core.rejected,
        }
