# distutils: language = c++
"""The cdef operator base (see _base.pyx): batches of id rows and the C-level push chain."""

from libc.stdint cimport int64_t
from libcpp.vector cimport vector


cdef class Batch:
    # Deltas of rows of `width` term ids (UNBOUND for an unbound column), flat: delta i's row is
    # values[i*width : (i+1)*width], its sign signs[i], its lineage leaves[starts[i] : starts[i+1]].
    cdef readonly Py_ssize_t width
    cdef vector[int64_t] values
    cdef vector[int] signs
    cdef vector[int64_t] leaves
    cdef vector[size_t] starts          # starts[0] == 0; one more entry than deltas

    cdef inline Py_ssize_t count(self) noexcept:
        return <Py_ssize_t>self.signs.size()
    cdef inline const int64_t* row(self, Py_ssize_t i) noexcept:
        return self.values.data() + i * self.width
    cdef inline const int64_t* lineage(self, Py_ssize_t i) noexcept:
        return self.leaves.data() + self.starts[i]
    cdef inline Py_ssize_t lineage_size(self, Py_ssize_t i) noexcept:
        return <Py_ssize_t>(self.starts[i + 1] - self.starts[i])
    cdef void clear(self) noexcept
    cdef int reset(self, Py_ssize_t width) except -1
    # Appends a delta; `row` has `width` ids.
    cdef int add(self, const int64_t* row, int sign, const int64_t* lineage, Py_ssize_t lineage_size) except -1
    # Appends a delta whose row is the next `width` ids pushed with push_value, then closed by close_row.
    cdef int push_value(self, int64_t value) except -1
    cdef int close_row(self, int sign, const int64_t* lineage, Py_ssize_t lineage_size) except -1
    cdef int swap(self, Batch other) except -1
    cdef int add_deltas(self, list deltas) except -1
    cdef list deltas(self)
    cdef tuple row_tuple(self, Py_ssize_t i)
    cdef tuple lineage_tuple(self, Py_ssize_t i)


cdef class Node:
    cdef public object schema
    cdef public object label
    cdef public int downstream_port
    cdef public int arity
    cdef public int64_t inputs_seen
    cdef public int64_t outputs_emitted
    cdef object _downstream
    cdef Node c_downstream               # the downstream when it is a Node: a C edge
    cdef int punctuations
    cdef bint python_tick_end            # a Python subclass overrides on_tick_end

    # An input batch on `port`: the operator's work. The default hands it to the Python on_batch.
    cdef int push(self, int port, Batch batch) except -1
    # One input's punctuation: the barrier, then tick_end, then the downstream's punctuation.
    cdef int punctuate(self, int64_t tau) except -1
    # After the tick's last punctuation, before forwarding it. The default runs on_tick_end when a
    # Python subclass overrides it.
    cdef int tick_end(self, int64_t tau) except -1
    # Counts the batch as output and hands it downstream: through C to a Node, as Deltas otherwise.
    # The batch is the caller's again when this returns.
    cdef int emit_batch(self, Batch batch) except -1
    # Hands Deltas on: to a Node through `scratch` (a batch of the operator's width), as they are to
    # a Python operator. For operators whose cores build Deltas.
    cdef int emit_deltas(self, list deltas, Batch scratch) except -1


cdef class Fan(Node):
    # The downstream of a window buffer shared by the queries of a unit (engine.shared_plan): each
    # batch and punctuation goes to every query's first operator, through C to a Node.
    cdef list _targets                   # (operator, port), in the queries' order
    cdef public dict errors              # id(operator) → the exception its plan raised this round
