# distutils: language = c++
"""Rows and lineages in C++, for the compiled DISTINCT, negation, OPTIONAL and top-k.

A row (term ids, None for unbound) or a lineage (leaf ids) becomes an :c:type:`Ids`: a small vector
of int64 that keeps up to three ids inline (no allocation, no pointer to follow: most rows and
lineages fit) and, when it keys a table, their hash, computed once by ``_indexes.key_of_c`` (the
join's key hash). A :c:type:`Table` holds entries (structs with an ``Ids key`` and a ``uint32_t
index``) by key: open addressing over a pool that never moves them, so an entry can be pointed to
(linked lists, the tick's dirty list) until it is erased; lookups compare whole id sequences, so no
collision can merge two rows. Unbound is stored as ``UNBOUND`` (-1): an
inline id (sign bit set) of type 31, which ``runtime/encoding.py`` never assigns (inline types stop
at 15), so no real term id takes it; a row holding -1 is refused rather than read as unbound.
Lineages hold no unbound, and their leaf ids may be negative (static mappings), so they are taken
as they are.

``as_delta`` reads a delta's three items without iterating it (a ``Delta`` is a tuple subclass, which
Cython's unpacking and indexing only take the fast path for when it is an exact tuple).

Only declarations and inline functions: cimporting this file adds no module to import.
"""

from cpython.long cimport PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from cqels_endpoint.operators._indexes cimport key_of_c

cdef extern from *:
    """
    #include <cstdint>
    #include <cstdlib>
    #include <cstring>
    #include <deque>
    #include <new>
    #include <utility>
    #include <vector>
    // A sequence of ids: up to LOCAL inline, more on the heap; `hash` is set by the code that keys
    // a map with it. Equality compares the ids.
    struct CqelsIds {
        static const uint32_t LOCAL = 3;
        size_t hash = 0;
        uint32_t n = 0;
        uint32_t cap = LOCAL;
        union { int64_t local[LOCAL]; int64_t* heap; };
        CqelsIds() noexcept {}
        CqelsIds(const CqelsIds& other) : hash(other.hash) { assign(other.data(), other.n); }
        CqelsIds(CqelsIds&& other) noexcept { take(other); }
        ~CqelsIds() { if (cap > LOCAL) std::free(heap); }
        CqelsIds& operator=(const CqelsIds& other) {
            if (this != &other) { assign(other.data(), other.n); hash = other.hash; }
            return *this;
        }
        CqelsIds& operator=(CqelsIds&& other) noexcept {
            if (this != &other) { if (cap > LOCAL) std::free(heap); take(other); }
            return *this;
        }
        int64_t* data() noexcept { return cap > LOCAL ? heap : local; }
        const int64_t* data() const noexcept { return cap > LOCAL ? heap : local; }
        size_t size() const noexcept { return n; }
        bool empty() const noexcept { return n == 0; }
        void clear() noexcept { n = 0; }
        int64_t& operator[](size_t i) noexcept { return data()[i]; }
        void reserve(size_t want) {
            if (want <= cap) return;
            size_t grown = cap * 2 > want ? cap * 2 : want;
            int64_t* fresh = static_cast<int64_t*>(std::malloc(grown * sizeof(int64_t)));
            if (!fresh) throw std::bad_alloc();
            std::memcpy(fresh, data(), n * sizeof(int64_t));
            if (cap > LOCAL) std::free(heap);
            heap = fresh;
            cap = static_cast<uint32_t>(grown);
        }
        void push_back(int64_t id) { if (n == cap) reserve(n + 1); data()[n++] = id; }
        void resize(size_t count, int64_t fill) {
            reserve(count);
            for (size_t i = n; i < count; ++i) data()[i] = fill;
            n = static_cast<uint32_t>(count);
        }
        void assign(const int64_t* ids, size_t count) {
            reserve(count);
            std::memmove(data(), ids, count * sizeof(int64_t));
            n = static_cast<uint32_t>(count);
        }
        void swap(CqelsIds& other) noexcept { CqelsIds tmp(std::move(other)); other = std::move(*this); *this = std::move(tmp); }
        bool operator==(const CqelsIds& other) const noexcept {
            return n == other.n && std::memcmp(data(), other.data(), n * sizeof(int64_t)) == 0;
        }
        bool operator!=(const CqelsIds& other) const noexcept { return !(*this == other); }
    private:
        void take(CqelsIds& other) noexcept {
            hash = other.hash; n = other.n; cap = other.cap;
            if (other.cap > LOCAL) { heap = other.heap; other.cap = LOCAL; other.n = 0; }
            else std::memcpy(local, other.local, sizeof local);
        }
    };
    // Entries E (each with an `Ids key`, hashed, and a `uint32_t index`) by key: the entries live in
    // a pool that never moves them (a deque, freed slots reused), so a pointer to an entry stays valid
    // until it is erased; the open-addressing table (linear probing, backward-shift deletion, at most
    // 3/4 full) holds only each key's hash and pool index. A lookup reads one table slot and, on a
    // hash match, the entry; nothing is allocated per entry.
    template <class E>
    struct CqelsTable {
        struct Slot { uint64_t hash; uint64_t index; };  // index: pool index + 1; 0 = empty
        std::deque<E> pool;
        std::vector<uint32_t> spare;
        std::vector<Slot> slots;
        size_t count = 0;
        static size_t spread(uint64_t h) noexcept { h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; return h ^ (h >> 33); }
        size_t size() const noexcept { return count; }
        size_t pool_size() const noexcept { return pool.size(); }
        E* at(size_t i) noexcept { return &pool[i]; }
        E* find(const CqelsIds& key) noexcept {
            if (slots.empty()) return nullptr;
            size_t mask = slots.size() - 1;
            for (size_t i = spread(key.hash) & mask;; i = (i + 1) & mask) {
                const Slot& slot = slots[i];
                if (slot.index == 0) return nullptr;
                if (slot.hash == key.hash && pool[slot.index - 1].key == key) return &pool[slot.index - 1];
            }
        }
        E* add(const CqelsIds& key) {  // key must be absent
            if ((count + 1) * 4 > slots.size() * 3) grow();
            uint32_t index;
            if (!spare.empty()) { index = spare.back(); spare.pop_back(); }
            else { pool.emplace_back(); index = static_cast<uint32_t>(pool.size() - 1); }
            E& entry = pool[index];
            entry.key = key;
            entry.index = index;
            place(key.hash, uint64_t(index) + 1);
            ++count;
            return &entry;
        }
        void erase(E* entry) {  // resets the entry and frees its slot
            size_t mask = slots.size() - 1, i = spread(entry->key.hash) & mask;
            uint64_t wanted = uint64_t(entry->index) + 1;
            while (slots[i].index != wanted) i = (i + 1) & mask;
            for (size_t j = (i + 1) & mask; slots[j].index != 0; j = (j + 1) & mask) {
                size_t home = spread(slots[j].hash) & mask;
                if (((j - home) & mask) >= ((j - i) & mask)) { slots[i] = slots[j]; i = j; }
            }
            slots[i].index = 0;
            uint32_t index = entry->index;
            *entry = E();
            spare.push_back(index);
            --count;
        }
    private:
        void place(uint64_t hash, uint64_t index) noexcept {
            size_t mask = slots.size() - 1, i = spread(hash) & mask;
            while (slots[i].index != 0) i = (i + 1) & mask;
            slots[i] = Slot{hash, index};
        }
        void grow() {
            std::vector<Slot> old(slots.empty() ? 16 : slots.size() * 2);
            old.swap(slots);
            for (const Slot& slot : old) if (slot.index) place(slot.hash, slot.index);
        }
    };
    static const int64_t CQELS_UNBOUND = -1;
    """
    cdef cppclass Ids "CqelsIds":
        size_t hash
        const int64_t* data() const
        size_t size() const
        bint empty() const
        void clear()
        int64_t& operator[](size_t)
        void push_back(int64_t) except +
        void resize(size_t, int64_t) except +
        void swap(Ids&)
        bint operator==(const Ids&)
        bint operator!=(const Ids&)
    cdef cppclass Table "CqelsTable"[E]:
        size_t size()
        size_t pool_size()
        E* at(size_t)
        E* find(const Ids&)
        E* add(const Ids&) except +
        void erase(E*) except +
    const int64_t UNBOUND "CQELS_UNBOUND"


cdef inline void hash_key(Ids& key) noexcept:
    key.hash = <size_t>key_of_c(key.data(), <Py_ssize_t>key.size())


cdef inline int row_ids(object row, Ids& out) except -1:
    """``out`` := the ids of ``row``, unbound as ``UNBOUND``."""
    cdef int64_t value
    out.clear()
    for item in row:
        if item is None:
            out.push_back(UNBOUND)
        else:
            value = item
            if value == UNBOUND:
                raise ValueError(f"term id {UNBOUND} is reserved for unbound columns (row {row})")
            out.push_back(value)
    return 0


cdef inline int row_key(object row, Ids& out) except -1:
    """``out`` := the key of ``row``."""
    row_ids(row, out)
    hash_key(out)
    return 0


cdef inline int lineage_key(object lineage, Ids& out) except -1:
    """``out`` := the key of ``lineage`` (leaf ids as they are)."""
    out.clear()
    for item in lineage:
        out.push_back(<int64_t>item)
    hash_key(out)
    return 0


cdef inline tuple ids_tuple(const int64_t* ids, Py_ssize_t n):
    """The Python tuple of ``n`` ids, ``UNBOUND`` back to None."""
    cdef tuple out = PyTuple_New(n)
    cdef Py_ssize_t i
    cdef object item
    for i in range(n):
        item = None if ids[i] == UNBOUND else PyLong_FromLongLong(ids[i])
        Py_INCREF(item)
        PyTuple_SET_ITEM(out, i, item)
    return out


cdef inline tuple lineage_tuple(const Ids& lineage):
    """The Python tuple of a lineage's leaf ids (all of them ints: -1 is a static mapping's leaf here)."""
    cdef Py_ssize_t n = <Py_ssize_t>lineage.size(), i
    cdef const int64_t* ids = lineage.data()
    cdef tuple out = PyTuple_New(n)
    cdef object item
    for i in range(n):
        item = PyLong_FromLongLong(ids[i])
        Py_INCREF(item)
        PyTuple_SET_ITEM(out, i, item)
    return out


cdef inline tuple as_delta(object delta):
    """``delta`` as the tuple ``(row, sign, lineage)``, checked."""
    if not PyTuple_Check(delta) or PyTuple_GET_SIZE(delta) != 3:
        raise TypeError(f"not a (row, sign, lineage) delta: {delta!r}")
    return <tuple>delta
