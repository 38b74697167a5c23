# distutils: language = c++
"""C-level state of the compiled top-k (see _topk.pyx; twin: reference/topk.py)."""

from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint32_t
from libcpp.vector cimport vector

from cqels_endpoint.operators._base cimport Batch, Node

from cqels_endpoint.operators._idkeys cimport Ids, Table
from cqels_endpoint.runtime._expressions cimport RowOrderKey

cdef extern from *:
    """
    #include <set>
    struct CqelsTopEntry;
    // Orders entries by their Python order keys (unique: each ends with the lineage). A failed
    // comparison leaves its Python exception set and throws, which Cython's `except +` passes on.
    struct CqelsTopLess { bool operator()(const CqelsTopEntry* a, const CqelsTopEntry* b) const; };
    typedef std::set<CqelsTopEntry*, CqelsTopLess> CqelsTopSet;
    struct CqelsTopEntry {
        CqelsIds key;                     // the lineage
        uint32_t index = 0;
        PyObject* order = nullptr;        // (*order key, lineage) of the live row (owned), or null
        PyObject* row = nullptr;          // the live row (owned), or null
        PyObject* shown_order = nullptr;  // the same of the row in the slice emitted last (owned), or null
        PyObject* shown_row = nullptr;
        CqelsTopSet::iterator position;   // in the order, while live
        bool live = false;
        bool in_slice = false;            // live and in the slice now
        bool touched = false;             // in this tick's list of entries to compare with the slice emitted
    };
    struct CqelsPythonError {};
    inline bool CqelsTopLess::operator()(const CqelsTopEntry* a, const CqelsTopEntry* b) const {
        int less = PyObject_RichCompareBool(a->order, b->order, Py_LT);
        if (less < 0) throw CqelsPythonError();
        return less != 0;
    }
    static CqelsTopSet::iterator cqels_top_insert(CqelsTopSet& order, CqelsTopEntry* entry) {
        return order.insert(entry).first;
    }
    """
    cdef cppclass TopEntry "CqelsTopEntry"
    cdef cppclass TopSet "CqelsTopSet":
        cppclass iterator:
            TopEntry*& operator*()
            iterator operator++()
            iterator operator--()
            bint operator==(iterator)
            bint operator!=(iterator)
        iterator begin()
        iterator end()
        void erase(iterator)
        size_t size()
    cdef cppclass TopEntry "CqelsTopEntry":
        Ids key
        uint32_t index
        PyObject* order
        PyObject* row
        PyObject* shown_order
        PyObject* shown_row
        TopSet.iterator position
        bint live
        bint in_slice
        bint touched
    TopSet.iterator top_insert "cqels_top_insert"(TopSet& order, TopEntry* entry) except +


cdef class _TopRows:
    cdef object key_of                # row -> order key (ORDER BY conditions, then the tie-break)
    cdef RowOrderKey row_key          # key_of when compiled (its key with the lineage in one C call), else None
    cdef Table[TopEntry] entries      # by lineage: live, or shown / touched this tick
    cdef TopSet order                 # the live entries, sorted
    cdef TopSet.iterator first        # the entry at position m (the slice's first), or end
    cdef TopSet.iterator last         # the entry at position m + k - 1 (the region's last), or end
    cdef Py_ssize_t offset            # m
    cdef Py_ssize_t stop              # m + k; -1 without LIMIT
    cdef bint empty                   # LIMIT 0: no slice, no region
    cdef bint dirty                   # a change fell in the influence region this tick
    cdef vector[TopEntry*] touched    # entries whose slice membership or row changed this tick
    cdef Ids probe
    cdef readonly int64_t shown_rows  # rows in the slice emitted last

    cdef void _touch(self, TopEntry* entry) noexcept
    cdef void _enter(self, TopEntry* entry) noexcept
    cdef void _leave(self, TopEntry* entry) noexcept
    cdef int insert(self, object row, object lineage) except -1
    cdef int remove(self, object lineage) except -1
    cdef int feed(self, list deltas) except -1
    cdef list flush(self)


cdef class _TopKNode(Node):
    cdef public _TopRows _rows
    cdef public Batch out
    cdef public bint _changed
    cdef public int64_t recomputations
    cdef public int64_t skipped_ticks
