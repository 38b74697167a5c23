# distutils: language = c++
"""Compiled BIND: the twin of ``extend.py`` (read it for the semantics), a ``Node`` (``_base``).

The expression is the one ``runtime.expressions.compile_expression`` gives both sides; what is
compiled here is the push around it: rows come in a batch, the value each live row got is kept in
a C++ table by lineage (its -1 carries it without evaluating again), and the extended rows go into
the output batch without a Python object per delta. ``BIND(?x AS ?y)`` copies the id in C.
"""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport UNBOUND, hash_key

from cqels_endpoint.errors import PlanError
from cqels_endpoint.operators.base import Operator
from cqels_endpoint.runtime.decoding import DecodedRow
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression
from cqels_endpoint.terms import Var


cdef class _ExtendNode(Node):
    def _setup(self, compute, positions, int copied, decoder, Py_ssize_t width):
        self.compute = compute
        self.positions = positions
        self.copied = copied
        self.decoder = decoder
        self.dictionary = decoder.dictionary
        self.out = Batch(width)

    def live(self):
        """The rows that entered and have not left."""
        return self.values.size()

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, k, count = batch.count(), n
        cdef const int64_t* lineage
        cdef const int64_t* row
        cdef Bound* entry
        cdef int64_t value
        self.inputs_seen += count
        self.out.reset(batch.width + 1)
        for i in range(count):
            lineage = batch.lineage(i)
            n = batch.lineage_size(i)
            row = batch.row(i)
            self.probe.clear()
            for k in range(n):
                self.probe.push_back(lineage[k])
            hash_key(self.probe)
            if batch.signs[i] > 0:
                if self.copied >= 0:
                    value = row[self.copied]
                    if value == UNBOUND:
                        self.errors += 1  # an unbound variable is an error, as the expression says
                    else:
                        self.dictionary.incref(value)
                else:
                    try:
                        term = self.compute(DecodedRow(self.positions, batch.row_tuple(i), self.decoder))
                    except ExpressionError:
                        self.errors += 1
                        value = UNBOUND
                    else:
                        value = self.dictionary.encode(term)
                entry = self.values.find(self.probe)
                if entry == NULL:
                    entry = self.values.add(self.probe)
                entry.value = value
            else:
                entry = self.values.find(self.probe)
                if entry == NULL:
                    raise KeyError(batch.lineage_tuple(i))
                value = entry.value
                self.values.erase(entry)
                if value != UNBOUND:
                    self.to_release.push_back(value)
            for k in range(batch.width):
                self.out.push_value(row[k])
            self.out.push_value(value)
            self.out.close_row(batch.signs[i], lineage, n)
        self.emit_batch(self.out)
        return 0

    cdef int tick_end(self, int64_t tau) except -1:
        # Release what left two ticks ago: the last tick's -1 rows may still be decoded.
        self._release(self.releasing)
        self.releasing.swap(self.to_release)
        return 0

    cdef int _release(self, vector[int64_t]& ids) except -1:
        if not ids.empty():
            self.dictionary.decref_many(ids)
            ids.clear()
        return 0

    def close(self):
        """Drop every reference this operator holds (the query is unregistered)."""
        cdef size_t k
        cdef Bound* entry
        self._release(self.releasing)
        self._release(self.to_release)
        for k in range(self.values.pool_size()):
            entry = self.values.at(k)
            if self.values.find(entry.key) == entry:  # a live entry (a freed one is reset)
                if entry.value != UNBOUND:
                    self.to_release.push_back(entry.value)
                self.values.erase(entry)
        self._release(self.to_release)


class Extend(_ExtendNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.extend.Extend`."""

    def __init__(self, input_schema, variable, expression, decoder, label="", **context):
        if variable in input_schema:
            msg = f"BIND assigns ?{variable}, which is already bound in its group: use another variable"
            raise PlanError(msg)
        Operator.__init__(self, (*input_schema, variable), label or "extend")
        positions = {name: position for position, name in enumerate(input_schema)}
        copied = positions.get(expression.name, -1) if isinstance(expression, Var) else -1
        self._setup(compile_expression(expression, **context), positions, copied, decoder, len(self.schema))

    def counters(self):
        return {**Operator.counters(self), "errors": self.errors, "live": self.live()}
