# distutils: language = c++
"""The compiled term dictionary (see _dictionary.pyx; twin: encoding.TermDictionaryPython)."""

from libc.stdint cimport int64_t, uint32_t, uint64_t, uintptr_t
from libcpp.string cimport string


cdef struct Entry:
    int64_t id
    uint32_t refs
    uint32_t length
    # followed by the form's ``length`` bytes (UTF-8)


cdef class TermDictionary:
    cdef uintptr_t* _by_form  # Entry* | the top bits of the form's hash in its low 3 bits; 0 = empty
    cdef Entry** _by_id  # NULL = empty
    cdef size_t _capacity  # of both tables: a power of two
    cdef int _shift  # 64 - log2(capacity), for the id table's Fibonacci hashing
    cdef size_t _count
    cdef int64_t _next_serial
    cdef dict _decoded  # id → the term decode built, while its entry lives
    cdef dict _datatypes  # datatype IRI → NamedNode, for decode
    cdef string _scratch  # the form of the term being encoded
    cdef string _canon  # the Store's form of it, when that differs (see _canonical)
    cdef string _lexical  # the rewritten lexical form of a positional double or float

    cdef int _allocate(self, size_t capacity) except -1
    cdef size_t _id_home(self, int64_t term_id) noexcept nogil
    cdef Py_ssize_t _find_form(self, const char* form, Py_ssize_t n, uint64_t h) noexcept
    cdef Entry* _entry(self, int64_t term_id) noexcept
    cdef void _place(self, Entry* entry, uint64_t h) noexcept
    cdef int _resize(self, size_t capacity) except -1
    cdef void _erase(self, Entry* entry) noexcept
    cdef int _form_of(self, object term) except -1
    cdef int64_t _canonical(self, const char** form, Py_ssize_t* n, int kind) except? -1
    cdef int64_t _intern(self, const char* form, Py_ssize_t n, int kind) except? -1
    cdef int64_t _encode(self, object term) except? -1
    cdef object _lookup(self, object term)
    cdef Entry* _live(self, int64_t term_id) except NULL
    cdef int _incref(self, int64_t term_id) except -1
    cdef int _decref(self, int64_t term_id) except -1
    cdef object _build(self, const Entry* entry)
    cdef object _decode(self, int64_t term_id)
