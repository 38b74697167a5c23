# distutils: language = c++
"""The cdef operator base: compiled operators push batches of id rows to each other through C.

A :class:`Batch` holds the deltas of one push as C++ vectors: rows of term ids of one width (the
emitting operator's schema; ``UNBOUND`` for an unbound column, as in ``_idkeys``), signs, and each
delta's lineage as its own run of leaf ids, so a lineage keeps its identity (its whole sequence of
leaves, of any length) as ``base.py``'s contract requires.

:class:`Node` is the C half of a compiled operator: ``push(port, batch)`` does its work on one input
batch, ``punctuate(tau)`` holds the punctuation barrier over its ``arity`` inputs, and
``emit_batch`` hands an output batch on. A compiled operator is a Python class deriving from its
cdef class (a ``Node``) and from its Python base (``base.Operator`` or a ``shared`` base), which
keeps the Python API (``connect``, ``counters``, ``describe``, ``close``); the ``Node`` comes first,
so its ``on_batch``, ``on_punctuation`` and ``emit`` are the ones called. Edges:

- Node to Node: ``push`` and ``punctuate`` are C calls, no Python object per delta;
- Node to a Python operator (a twin, ``Filter`` over an uncompilable expression, the sink of a
  test): the batch becomes a list of :class:`~cqels_endpoint.operators.base.Delta` at that edge;
- Python operator to Node: ``on_batch`` turns the Delta list into one batch at the Node's input.

A downstream consumes a batch during ``push`` and keeps nothing of it: the emitter reuses it.
"""

from cpython.long cimport PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from cqels_endpoint.operators._idkeys cimport UNBOUND, as_delta, ids_tuple

from cqels_endpoint.operators.base import Delta, Operator

_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__


cdef class Batch:
    """A batch of deltas in C++ vectors (module docstring); ``len()`` is its number of deltas."""

    def __cinit__(self, Py_ssize_t width=0):
        self.width = width
        self.starts.push_back(0)

    cdef void clear(self) noexcept:
        self.values.clear()
        self.signs.clear()
        self.leaves.clear()
        self.starts.resize(1)

    cdef int reset(self, Py_ssize_t width) except -1:
        self.clear()
        self.width = width
        return 0

    cdef int add(self, const int64_t* row, int sign, const int64_t* lineage, Py_ssize_t lineage_size) except -1:
        cdef Py_ssize_t k
        for k in range(self.width):
            self.values.push_back(row[k])
        return self.close_row(sign, lineage, lineage_size)

    cdef int push_value(self, int64_t value) except -1:
        self.values.push_back(value)
        return 0

    cdef int close_row(self, int sign, const int64_t* lineage, Py_ssize_t lineage_size) except -1:
        cdef Py_ssize_t k
        self.signs.push_back(sign)
        for k in range(lineage_size):
            self.leaves.push_back(lineage[k])
        self.starts.push_back(self.leaves.size())
        return 0

    cdef int swap(self, Batch other) except -1:
        self.values.swap(other.values)
        self.signs.swap(other.signs)
        self.leaves.swap(other.leaves)
        self.starts.swap(other.starts)
        self.width, other.width = other.width, self.width
        return 0

    cdef int add_deltas(self, list deltas) except -1:
        """Appends Python deltas (rows of ``width`` ids or None)."""
        cdef tuple delta
        cdef Py_ssize_t n
        cdef int64_t value
        cdef int sign
        for item in deltas:
            delta = as_delta(item)
            row = delta[0]
            n = 0
            for term in row:
                if term is None:
                    self.values.push_back(UNBOUND)
                else:
                    value = term
                    if value == UNBOUND:
                        raise ValueError(f"term id {UNBOUND} is reserved for unbound columns (row {row})")
                    self.values.push_back(value)
                n += 1
            if n != self.width:
                raise ValueError(f"a row of {n} columns where {self.width} are expected: {row}")
            sign = 1 if <int>delta[1] > 0 else -1
            self.signs.push_back(sign)
            for leaf in delta[2]:
                self.leaves.push_back(<int64_t>leaf)
            self.starts.push_back(self.leaves.size())
        return 0

    cdef tuple row_tuple(self, Py_ssize_t i):
        return ids_tuple(self.row(i), self.width)

    cdef tuple lineage_tuple(self, Py_ssize_t i):
        cdef Py_ssize_t n = self.lineage_size(i), k
        cdef const int64_t* leaves = self.lineage(i)
        cdef tuple out = PyTuple_New(n)
        cdef object item
        for k in range(n):
            item = PyLong_FromLongLong(leaves[k])
            Py_INCREF(item)
            PyTuple_SET_ITEM(out, k, item)
        return out

    cdef list deltas(self):
        """The batch as a list of Delta."""
        cdef Py_ssize_t i
        return [
            _new_tuple(Delta, (self.row_tuple(i), self.signs[i], self.lineage_tuple(i)))
            for i in range(self.count())
        ]

    def to_deltas(self):
        """The batch as a list of Delta (tests, explain)."""
        return self.deltas()

    @staticmethod
    def of(Py_ssize_t width, list deltas):
        """A batch of ``width``-wide Python deltas (tests)."""
        cdef Batch batch = Batch(width)
        batch.add_deltas(deltas)
        return batch

    def __len__(self):
        return self.count()


cdef class Node:
    """The C half of a compiled operator (module docstring)."""

    def __cinit__(self, *args, **kwargs):
        # The arity a class of the Python side states (``arity = 2``), which this C attribute hides.
        self.arity = 1
        for klass in type(self).__mro__:
            stated = klass.__dict__.get("arity")
            if type(stated) is int:
                self.arity = stated
                break
        self.downstream_port = 0
        hook = getattr(type(self), "on_tick_end", None)
        self.python_tick_end = hook is not None and hook is not Operator.on_tick_end

    @property
    def downstream(self):
        return self._downstream

    @downstream.setter
    def downstream(self, value):
        self._downstream = value
        self.c_downstream = value if isinstance(value, Node) else None

    cdef int push(self, int port, Batch batch) except -1:
        self.on_batch(port, batch.deltas())
        return 0

    cdef int punctuate(self, int64_t tau) except -1:
        self.punctuations += 1
        if self.punctuations < self.arity:  # sources (arity 0) act on their single punctuation
            return 0
        self.punctuations = 0
        self.tick_end(tau)
        if self.c_downstream is not None:
            self.c_downstream.punctuate(tau)
        elif self._downstream is not None:
            self._downstream.on_punctuation(tau)
        return 0

    cdef int tick_end(self, int64_t tau) except -1:
        if self.python_tick_end:
            self.on_tick_end(tau)
        return 0

    cdef int emit_batch(self, Batch batch) except -1:
        cdef Py_ssize_t n = batch.count()
        if n == 0:
            return 0
        self.outputs_emitted += n
        if self.c_downstream is not None:
            self.c_downstream.push(self.downstream_port, batch)
        elif self._downstream is not None:
            self._downstream.on_batch(self.downstream_port, batch.deltas())
        return 0

    cdef int emit_deltas(self, list deltas, Batch scratch) except -1:
        if not deltas:
            return 0
        if self.c_downstream is not None:
            scratch.clear()
            scratch.add_deltas(deltas)
            return self.emit_batch(scratch)
        self.outputs_emitted += len(deltas)
        if self._downstream is not None:
            self._downstream.on_batch(self.downstream_port, deltas)
        return 0

    def on_batch(self, int port, list deltas):
        """A Python edge into this operator: the deltas become one batch."""
        if not deltas:
            return
        cdef Batch batch = Batch(len(as_delta(deltas[0])[0]))
        batch.add_deltas(deltas)
        self.push(port, batch)

    def on_punctuation(self, tau):
        self.punctuate(tau)

    def emit(self, list deltas):
        """Python-level emission (the Operator API): through a batch to a Node downstream."""
        if not deltas:
            return
        cdef Batch batch
        if self.c_downstream is not None:
            batch = Batch(len(as_delta(deltas[0])[0]))
            batch.add_deltas(deltas)
            self.emit_batch(batch)
        else:
            self.outputs_emitted += len(deltas)
            if self._downstream is not None:
                self._downstream.on_batch(self.downstream_port, deltas)

    def push_batch(self, int port, Batch batch):
        """``push`` from Python (tests)."""
        self.push(port, batch)


cdef class Fan(Node):
    """Hands each batch and punctuation of one upstream (a window buffer several queries share) to
    the first operator of every query's plan: the queries evaluate together, with no Python call
    per query when those operators are Nodes. A query's plan that raises does not stop the others:
    its exception is kept in ``errors`` under its operator's ``id``, for the engine to fail that query alone
    (the round's other plans get their batches and punctuations as usual)."""

    def __init__(self, targets=()):
        self.label = "fan"
        self.errors = {}
        self.set_targets(list(targets))

    def set_targets(self, list targets):
        """``targets``: the ``(operator, port)`` each batch goes to, in order."""
        self._targets = [(operator, port) for operator, port in targets]

    @property
    def targets(self):
        return list(self._targets)

    cdef int push(self, int port, Batch batch) except -1:
        cdef tuple target
        cdef list deltas = None
        self.inputs_seen += batch.count()
        for target in self._targets:
            operator = target[0]
            if self.errors and id(operator) in self.errors:
                continue
            try:
                if isinstance(operator, Node):
                    (<Node>operator).push(<int>target[1], batch)
                else:
                    if deltas is None:
                        deltas = batch.deltas()
                    operator.on_batch(target[1], list(deltas))
            except Exception as error:
                self.errors[id(operator)] = error
        return 0

    cdef int punctuate(self, int64_t tau) except -1:
        cdef tuple target
        for target in self._targets:
            operator = target[0]
            if self.errors and id(operator) in self.errors:
                continue
            try:
                if isinstance(operator, Node):
                    (<Node>operator).punctuate(tau)
                else:
                    operator.on_punctuation(tau)
            except Exception as error:
                self.errors[id(operator)] = error
        return 0


def punctuate_all(list sources, int64_t tau):
    """Closes tick ``tau`` on every source of a plan, in order: through C for a ``Node``."""
    for source in sources:
        if isinstance(source, Node):
            (<Node>source).punctuate(tau)
        else:
            source.on_punctuation(tau)


def emitted_total(list operators):
    """The sum of the operators' ``outputs_emitted`` counters (read in C for a ``Node``)."""
    cdef int64_t total = 0
    for operator in operators:
        if isinstance(operator, Node):
            total += (<Node>operator).outputs_emitted
        else:
            total += operator.outputs_emitted
    return total
