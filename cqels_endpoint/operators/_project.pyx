# distutils: language = c++
"""Compiled projection: the twin of ``reference/project.py``.

Projection sits on top of every SELECT plan and touches every delta: a ``Node`` (``_base``) whose
push copies the kept columns of each row of the input batch into its output batch, in C. Deltas
from a Python operator are projected as tuples, as they come (the twin takes any ints).
"""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport UNBOUND

from cqels_endpoint.operators.base import Delta, Operator

_new_tuple = tuple.__new__


cdef class _ProjectNode(Node):
    cdef vector[int] positions  # input position of each output column, -1: unbound
    cdef Batch out

    def _setup(self, positions):
        for position in positions:
            self.positions.push_back(position)
        self.out = Batch(len(positions))

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        cdef size_t k
        cdef int position
        cdef const int64_t* row
        self.inputs_seen += count
        self.out.clear()
        for i in range(count):
            row = batch.row(i)
            for k in range(self.positions.size()):
                position = self.positions[k]
                if position >= 0:
                    self.out.push_value(row[position])
                else:
                    self.out.push_value(UNBOUND)
            self.out.close_row(batch.signs[i], batch.lineage(i), batch.lineage_size(i))
        self.emit_batch(self.out)
        return 0

    def on_batch(self, port, list deltas):
        """A Python edge: projected as tuples (any ints, as the twin takes), emitted as Deltas."""
        cdef Py_ssize_t width = self.positions.size(), k
        cdef int position
        cdef list out = []
        cdef tuple row
        cdef list values
        self.inputs_seen += len(deltas)
        for delta in deltas:
            row = <tuple>tuple(delta[0])
            values = [None] * width
            for k in range(width):
                position = self.positions[k]
                if position >= 0:
                    values[k] = row[position]
            out.append(_new_tuple(Delta, (tuple(values), delta[1], delta[2])))
        self.emit(out)


class Project(_ProjectNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.reference.project.Project`."""

    def __init__(self, input_schema, variables, label=""):
        Operator.__init__(self, tuple(variables), label or "project")
        positions = {name: index for index, name in enumerate(input_schema)}
        self._positions = tuple(positions.get(name, -1) for name in self.schema)
        self._setup(self._positions)
