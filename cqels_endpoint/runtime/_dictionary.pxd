# distutils: language = c++
"""The compiled term dictionary (see _dictionary.pyx; twin: encoding.TermDictionaryPython)."""

from libc.stdint cimport int64_t, uint32_t, uint64_t, uintptr_t
from libcpp.string cimport string
from libcpp.unordered_set cimport unordered_set


cdef extern from *:
    """
    #include <cstdlib>
    #include <new>
    #include <vector>
    // Blocks of up to LARGEST bytes (multiples of 8) carved from 64 KiB slabs, a free list per
    // size: no allocator header or 16-byte rounding per block (a 34-byte IRI's entry takes 56
    // bytes, not malloc's 64; a short literal's 32, not 48). A released block goes to its size's
    // list for the next term of that size; slabs are freed with the dictionary. Larger blocks
    // come from malloc, and the owner frees those itself.
    struct CqelsSlabs {
        static const size_t LARGEST = 256;
        static const size_t SLAB = 64 * 1024;
        void* free_lists[LARGEST / 8 + 1] = {};
        char* cursor = nullptr;
        size_t left = 0;
        std::vector<void*> slabs;
        CqelsSlabs() {}
        CqelsSlabs(const CqelsSlabs&) = delete;
        CqelsSlabs& operator=(const CqelsSlabs&) = delete;
        ~CqelsSlabs() { for (void* slab : slabs) std::free(slab); }
        static size_t rounded(size_t size) noexcept { return (size + 7) & ~size_t(7); }
        static bool slabbed(size_t size) noexcept { return rounded(size) <= LARGEST; }
        void* allocate(size_t size) noexcept {  // NULL when out of memory
            size = rounded(size);
            if (size > LARGEST) return std::malloc(size);
            void* block = free_lists[size / 8];
            if (block) { free_lists[size / 8] = *static_cast<void**>(block); return block; }
            if (left < size) {
                char* slab = static_cast<char*>(std::malloc(SLAB));
                if (!slab) return nullptr;
                try { slabs.push_back(slab); } catch (...) { std::free(slab); return nullptr; }
                if (left >= 8) release(cursor, left);  // the old slab's tail serves its size
                cursor = slab;
                left = SLAB;
            }
            block = cursor;
            cursor += size;
            left -= size;
            return block;
        }
        void release(void* block, size_t size) noexcept {
            size = rounded(size);
            if (size > LARGEST) { std::free(block); return; }
            *static_cast<void**>(block) = free_lists[size / 8];
            free_lists[size / 8] = block;
        }
    };
    """
    cdef cppclass Slabs "CqelsSlabs":
        void* allocate(size_t) noexcept
        void release(void*, size_t) noexcept
        @staticmethod
        bint slabbed(size_t) noexcept


cdef struct Entry:
    int64_t id
    uint32_t refs
    uint32_t length
    # followed by the form's ``length`` bytes (UTF-8)


cdef class TermDictionary:
    cdef uintptr_t* _by_form  # Entry* | the low 3 bits of the form's hash; 0 = empty
    cdef Entry** _by_id  # NULL = empty
    cdef size_t _capacity  # of both tables: grows by half when 3/4 full
    cdef size_t _count
    cdef Slabs _slabs  # the entries' storage
    cdef int64_t _next_serial
    cdef dict _decoded  # id → the term decode built, while its entry lives
    cdef dict _datatypes  # datatype IRI → NamedNode, for decode
    cdef string _scratch  # the form of the term being encoded
    cdef string _canon  # the Store's form of it, when that differs (see _canonical)
    cdef string _lexical  # the rewritten lexical form of a positional double or float
    cdef object _kept  # the last predicate filter encode_triples was given (a stream's, held until it changes)
    cdef unordered_set[int64_t] _kept_ids  # its ids

    cdef int _allocate(self, size_t capacity) except -1
    cdef size_t _id_home(self, int64_t term_id) noexcept nogil
    cdef Py_ssize_t _find_form(self, const char* form, Py_ssize_t length, uint64_t h) noexcept
    cdef Entry* _entry(self, int64_t term_id) noexcept
    cdef void _place(self, Entry* entry, uint64_t h) noexcept
    cdef int _resize(self, size_t capacity) except -1
    cdef void _erase(self, Entry* entry) noexcept
    cdef int _form_of(self, object term) except -1
    cdef int64_t _canonical(self, const char** form, Py_ssize_t* n, int kind) except? -1
    cdef int64_t _intern(self, const char* form, Py_ssize_t n, int kind) except? -1
    cdef int64_t _encode(self, object term) except? -1
    cdef object _lookup(self, object term)
    cdef Entry* _kept_entry(self, const char* form, Py_ssize_t n) noexcept
    cdef Entry* _live(self, int64_t term_id) except NULL
    cdef int _incref(self, int64_t term_id) except -1
    cdef int _decref(self, int64_t term_id) except -1
    cdef object _build(self, const Entry* entry)
    cdef object _decode(self, int64_t term_id)
