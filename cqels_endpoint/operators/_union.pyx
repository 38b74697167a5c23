# distutils: language = c++
"""Compiled UNION: the twin of ``reference/union.py``, same output rows, lineages and order; read
the reference for the semantics. Each delta's row is rebuilt by a C loop over the column positions
of its port (the operator is stateless)."""

from libcpp.vector cimport vector

from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.shared.schemas import union_schema

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class _Aligner:
    def __init__(self, tuple schema, left_schema, right_schema):
        cdef vector[int] positions
        self.branches = ((0,), (1,))
        for side in (left_schema, right_schema):
            where = {name: i for i, name in enumerate(side)}
            positions.clear()
            for name in schema:
                positions.push_back(where.get(name, -1))
            self.positions.push_back(positions)

    cdef list align(self, int port, list deltas):
        cdef vector[int]* positions = &self.positions[port]
        cdef Py_ssize_t width = positions.size(), k
        cdef int position
        cdef tuple branch = <tuple>self.branches[port]
        cdef tuple row
        cdef list values
        cdef list out = []
        for delta in deltas:
            row = <tuple>tuple(delta[0])
            values = [None] * width
            for k in range(width):
                position = positions[0][k]
                if position >= 0:
                    values[k] = row[position]
            out.append(_new_tuple(Delta, (tuple(values), delta[1], branch + <tuple>delta[2])))
        return out


class Union(Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.union.Union`."""

    arity = 2

    def __init__(self, left_schema, right_schema, label=""):
        super().__init__(union_schema(left_schema, right_schema), label or "union")
        self._aligner = _Aligner(self.schema, left_schema, right_schema)
        self.inputs_per_port = [0, 0]

    def on_batch(self, int port, list deltas):
        self.inputs_seen += len(deltas)
        self.inputs_per_port[port] += len(deltas)
        self.emit((<_Aligner>self._aligner).align(port, deltas))

    def counters(self):
        return {**Operator.counters(self), "inputs_per_port": list(self.inputs_per_port)}
