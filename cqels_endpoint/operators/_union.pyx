# distutils: language = c++
"""Compiled UNION: the twin of ``reference/union.py``, same output rows, lineages and order; read
the reference for the semantics. Each delta's row is rebuilt by a C loop over the column positions
of its port (the operator is stateless); a ``Node`` (``_base``), it does so on batches in C."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport UNBOUND

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


cdef class _UnionNode(Node):
    """The operator's C half: each row is copied into the output batch column by column, its
    lineage prefixed with its port."""

    cdef int push(self, int port, Batch batch) except -1:
        cdef vector[int]* positions = &self._aligner.positions[port]
        cdef Py_ssize_t i, k, count = batch.count(), width = positions.size()
        cdef int position
        cdef const int64_t* row
        cdef const int64_t* lineage
        self.inputs_seen += count
        self.per_port[port] += count
        self.out.reset(width)
        for i in range(count):
            row = batch.row(i)
            for k in range(width):
                position = positions[0][k]
                if position >= 0:
                    self.out.push_value(row[position])
                else:
                    self.out.push_value(UNBOUND)
            self.lineage.clear()
            self.lineage.push_back(port)
            lineage = batch.lineage(i)
            for k in range(batch.lineage_size(i)):
                self.lineage.push_back(lineage[k])
            self.out.close_row(batch.signs[i], self.lineage.data(), <Py_ssize_t>self.lineage.size())
        self.emit_batch(self.out)
        return 0

    def on_batch(self, int port, list deltas):
        """A Python edge: aligned as tuples (any ints, as the twin takes), emitted as Deltas."""
        self.inputs_seen += len(deltas)
        self.per_port[port] += len(deltas)
        self.emit(self._aligner.align(port, deltas))

    @property
    def inputs_per_port(self):
        return list(self.per_port)

    @inputs_per_port.setter
    def inputs_per_port(self, counts):
        self.per_port = counts


class Union(_UnionNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.union.Union`."""

    arity = 2

    def __init__(self, left_schema, right_schema, label=""):
        Operator.__init__(self, union_schema(left_schema, right_schema), label or "union")
        self._aligner = _Aligner(self.schema, left_schema, right_schema)
        self.inputs_per_port = [0, 0]
        self.out = Batch(len(self.schema))

    def counters(self):
        return {**Operator.counters(self), "inputs_per_port": list(self.inputs_per_port)}
