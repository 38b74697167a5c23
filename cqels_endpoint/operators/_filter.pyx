# distutils: language = c++
"""Compiled FILTER: the twin of ``filter.py`` (read it for the semantics), a ``Node`` (``_base``).

The expressions are the ones ``runtime.expressions.compile_filter`` gives the twin (compiled
numeric expressions, or their closures), tested here by ``compile_row_filter``'s ``RowFilter`` on
each entering row's ids (a ``DecodedRow`` only for what leaves the compiled subset); the push
around them is compiled too: rows come in a batch, the lineages of the rows
that passed are a C++ table (a retraction is one lookup), and the rows that pass are copied into
the output batch without a Python object per delta.
"""

from libc.stdint cimport int64_t

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport hash_key
from cqels_endpoint.runtime._expressions cimport RowFilter

from cqels_endpoint.operators.base import Operator
from cqels_endpoint.runtime.expressions import compile_row_filter


cdef class _FilterNode(Node):
    def _setup(self, passes, Py_ssize_t width):
        self.passes = passes
        self.row_filter = passes if isinstance(passes, RowFilter) else None
        self.out = Batch(width)

    def live(self):
        """The rows that passed and have not left."""
        return self.passed.size()

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, k, count = batch.count()
        cdef const int64_t* lineage
        cdef Passed* entry
        self.inputs_seen += count
        self.out.reset(batch.width)
        for i in range(count):
            lineage = batch.lineage(i)
            self.probe.clear()
            for k in range(batch.lineage_size(i)):
                self.probe.push_back(lineage[k])
            hash_key(self.probe)
            if batch.signs[i] > 0:
                if self.row_filter.passes(batch.row_tuple(i)) if self.row_filter is not None else self.passes(batch.row_tuple(i)):
                    if self.passed.find(self.probe) == NULL:
                        self.passed.add(self.probe)
                    self.out.add(batch.row(i), 1, lineage, batch.lineage_size(i))
                else:
                    self.rejected += 1
            else:
                entry = self.passed.find(self.probe)
                if entry != NULL:
                    self.passed.erase(entry)
                    self.out.add(batch.row(i), -1, lineage, batch.lineage_size(i))
        self.emit_batch(self.out)
        return 0


class Filter(_FilterNode, Operator):
    """Compiled twin of :class:`cqels_endpoint.operators.filter.Filter`."""

    def __init__(self, schema, expressions, decoder, label="", **context):
        Operator.__init__(self, tuple(schema), label or "filter")
        positions = {name: position for position, name in enumerate(self.schema)}
        self._setup(compile_row_filter(tuple(expressions), positions, decoder, **context), len(self.schema))

    def counters(self):
        return {**Operator.counters(self), "rejected": self.rejected, "live": self.live()}
