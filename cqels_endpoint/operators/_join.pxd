# distutils: language = c++
"""C-level state of the compiled window buffer and multiway join (see _join.pyx; twin: reference/join.py)."""

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libcpp.deque cimport deque
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node
from cqels_endpoint.operators._idkeys cimport Ids, Table


cdef struct JoinRow:                # one live row of one input, keyed by its lineage
    Ids key                          # its lineage
    uint32_t index                   # its place in the table's pool: the row's handle
    Ids row                          # its ids (UNBOUND where unbound)
    vector[int64_t] derived          # the serials of the outputs made with it, oldest first…
    size_t stale                     # …of which this many were retracted through another input
    int64_t before                   # the handles of its neighbours in arrival order (-1: none)
    int64_t after
    uint32_t born                    # visible from this generation of its input on (0: pushed)…
    uint32_t dies                    # …until this one (ALIVE: not leaving)


cdef struct JoinOutput:
    Ids row
    Ids lineage
    vector[int64_t] handles          # the input rows it joins, by port


cdef class _JoinNode(Node):
    cdef int n
    cdef int width
    cdef vector[vector[int]] positions      # per input: output position of each column
    cdef vector[vector[int]] join_columns   # per input: its columns shared with another input
    cdef vector[vector[int]] join_positions # per input: output position of each join column
    cdef list index                         # per input, per join column: RingIndex value → handles
    cdef list unbound                       # per input, per join column: RingIndex 0 → unbound handles
    cdef vector[Table[JoinRow]] rows        # per input: its live rows by lineage
    cdef vector[int64_t] first              # per input: the oldest live row's handle (-1: none)
    cdef vector[int64_t] last               # per input: the newest's
    cdef unordered_map[int64_t, JoinOutput] outputs  # by serial
    cdef int64_t next_serial
    cdef vector[int64_t] values             # the partial mapping being extended
    cdef vector[char] bound
    cdef vector[int64_t] parts              # the input rows of the partial mapping, by port
    cdef vector[int64_t] per_port           # deltas received per input
    # A staged change (stage_rows, release_rows, flip_rows; module docstring), per input: the
    # generation probes see, the last one released, the rows entering and leaving with the
    # generations after it (in generation order), the change of the visible rows each of those
    # generations makes when it becomes visible, the visible rows, the invisible rows to delete.
    cdef vector[uint32_t] epoch
    cdef vector[uint32_t] released
    cdef vector[vector[int64_t]] entering
    cdef vector[vector[int64_t]] leaving
    cdef vector[deque[int64_t]] shifts
    cdef vector[int64_t] live
    cdef vector[deque[int64_t]] garbage
    cdef vector[int] component              # per input: its connected part of the join graph
    cdef int restrict_port                  # while a flip extends from another input: only the
    cdef uint32_t restrict_after            # rows of this input born after this generation
    cdef public Py_ssize_t collect_per_tick
    cdef Ids probe
    cdef Batch out
    cdef readonly int64_t probes
    cdef readonly int64_t pruned
    cdef unordered_map[string, size_t] order_numbers  # each probe order seen, by its ports…
    cdef vector[string] orders              # …in the order first seen…
    cdef vector[int64_t] order_counts       # …and how often

    cdef int _insert(self, int port, Batch batch, Py_ssize_t i) except -1
    cdef JoinRow* _store(self, int port, const int64_t* row, const int64_t* lineage, Py_ssize_t size, uint32_t born) except NULL
    cdef int _extend_from(self, int port, int64_t handle) except -1
    cdef int _retract(self, int port, JoinRow* entry) except -1
    cdef int _unstore(self, int port, JoinRow* entry) except -1
    cdef Py_ssize_t _collect(self, Py_ssize_t limit) except -1
    cdef int _delete(self, int port, Batch batch, Py_ssize_t i) except -1
    cdef int _extend(self, uint64_t remaining, string& order, int depth) except -1
    cdef int _register(self) except -1
    cdef int _forget(self, int port, int64_t serial) except -1


cdef struct Leaf:
    int64_t seq
    int64_t ids[3]


cdef class _Leaves:
    cdef deque[Leaf] leaves  # dense: a removed record's place takes the last record
    cdef uint32_t* by_seq  # record number + 1 by the leaf's seq; 0 = empty
    cdef uint32_t* by_triple  # record number + 1 by the triple
    cdef size_t slots  # of both tables: grows by half when 3/4 full
    cdef unordered_map[int64_t, int64_t] copies  # leaf → copies beyond the first, when any
    cdef unordered_map[int64_t, int64_t] leaf_of_copy  # a later copy's seq → its triple's leaf
    cdef vector[vector[int]] columns  # for each column of a row, the triple positions holding it

    cdef object row(self, const int64_t* ids)

    cdef int _allocate(self, size_t slots) except -1
    cdef size_t _seq_home(self, int64_t seq) noexcept
    cdef size_t _triple_home(self, const int64_t* ids) noexcept
    cdef Py_ssize_t find_seq(self, int64_t seq) noexcept
    cdef Py_ssize_t find_triple(self, const int64_t* ids) noexcept
    cdef void _index(self, size_t record) noexcept
    cdef int _resize(self, size_t slots) except -1
    cdef int add(self, int64_t seq, const int64_t* ids) except -1
    cdef void _unindex(self, uint32_t* table, size_t hole, bint by_seq) noexcept
    cdef size_t _slot_of(self, uint32_t* table, size_t home, uint32_t value) noexcept
    cdef int remove(self, Py_ssize_t record) except -1


cdef class _WindowNode(Node):
    cdef _Leaves leaves
    cdef vector[vector[int]] columns        # for each column of a row, the triple positions holding it
    cdef Batch pending                      # the tick's deltas…
    cdef Batch flushing                     # …as they go downstream
    cdef vector[int64_t] released           # triples to hand back at the next punctuation…
    cdef vector[int64_t] releasing          # …and those handed back at this one
    cdef object on_release
    cdef public int64_t expired
    cdef public int64_t rejected

    cdef bint _consistent(self, const int64_t* ids) noexcept
    cdef int _row_into(self, const int64_t* ids, int sign, int64_t leaf) except -1
