# distutils: language = c++
"""The aggregate's record of each input row it holds, for rows whose lineage is one leaf (a single
window or cache pattern: most GROUP BY inputs), in C++: 24 bytes a row in a deque, found by the leaf
through an open-addressing table of 32-bit record numbers (linear probing, ``runtime/_slots``:
grown by half when 3/4 full; backward-shift deletion; the last record moves into a hole, so the
deque stays dense). A row held in a Python dict instead costs a lineage tuple, its int, a (group,
handles) tuple, a handle list and the dict's slot: about 250 bytes more.

A record owns a reference to its group and, unless ``handles`` holds bits (see ``_aggregate``), to
its handles object; the owner releases them when it takes the record back or is freed.

Only declarations and inline code: cimporting this file adds no module to import.
"""

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uintptr_t

from cqels_endpoint.runtime._slots cimport slot_home  # its C code comes first: the table's uses it

cdef extern from *:
    """
    #include <cstdint>
    #include <cstdlib>
    #include <deque>
    #include <new>
    struct CqelsRowRecord { int64_t leaf; PyObject* group; uintptr_t handles; };
    struct CqelsRowRecords {
        static const size_t MIN_SLOTS = 16;
        std::deque<CqelsRowRecord> records;
        uint32_t* slots = nullptr;  // record number + 1; 0 = empty
        size_t capacity = 0;
        CqelsRowRecords() { allocate(MIN_SLOTS); }
        ~CqelsRowRecords() { std::free(slots); }
        CqelsRowRecords(const CqelsRowRecords&) = delete;
        CqelsRowRecords& operator=(const CqelsRowRecords&) = delete;
        size_t size() const noexcept { return records.size(); }
        CqelsRowRecord& at(size_t record) noexcept { return records[record]; }
        // Whether one more record fits the 32-bit record numbers.
        bool full() const noexcept { return records.size() >= 0xFFFFFFFEu; }
        // The record of `leaf`, or -1.
        ptrdiff_t find(int64_t leaf) const noexcept {
            for (size_t i = home(leaf);; i = cqels_next(i, capacity)) {
                uint32_t slot = slots[i];
                if (slot == 0) return -1;
                if (records[slot - 1].leaf == leaf) return ptrdiff_t(slot) - 1;
            }
        }
        // Adds a record (its leaf must be absent).
        void add(const CqelsRowRecord& record) {
            if ((records.size() + 1) * 4 > capacity * 3) resize(capacity + capacity / 2);
            records.push_back(record);
            index(records.size() - 1);
        }
        // Removes record `record` (returned), moving the last one into its place.
        CqelsRowRecord take(size_t record) {
            CqelsRowRecord gone = records[record];
            size_t last = records.size() - 1;
            unindex(slot_of(gone.leaf, uint32_t(record + 1)));
            if (record != last) {
                slots[slot_of(records[last].leaf, uint32_t(last + 1))] = uint32_t(record + 1);
                records[record] = records[last];
            }
            records.pop_back();
            if (capacity > MIN_SLOTS && records.size() * 8 < capacity)
                resize(capacity >= 4 * MIN_SLOTS ? capacity / 4 : MIN_SLOTS);
            return gone;
        }
        // Forgets every record (the owner released their references).
        void clear() {
            std::deque<CqelsRowRecord>().swap(records);
            std::free(slots);
            slots = nullptr;
            allocate(MIN_SLOTS);
        }
    private:
        size_t home(int64_t leaf) const noexcept {
            return cqels_home(uint64_t(leaf) * CQELS_GOLDEN, capacity);
        }
        void allocate(size_t count) {
            uint32_t* fresh = static_cast<uint32_t*>(std::calloc(count, sizeof(uint32_t)));
            if (!fresh) throw std::bad_alloc();
            slots = fresh;
            capacity = count;
        }
        void index(size_t record) noexcept {
            size_t i = home(records[record].leaf);
            while (slots[i] != 0) i = cqels_next(i, capacity);
            slots[i] = uint32_t(record + 1);
        }
        size_t slot_of(int64_t leaf, uint32_t value) const noexcept {
            size_t i = home(leaf);
            while (slots[i] != value) i = cqels_next(i, capacity);
            return i;
        }
        void unindex(size_t hole) noexcept {
            for (size_t j = cqels_next(hole, capacity); slots[j] != 0; j = cqels_next(j, capacity)) {
                size_t from = home(records[slots[j] - 1].leaf);
                if (cqels_distance(from, j, capacity) >= cqels_distance(hole, j, capacity)) { slots[hole] = slots[j]; hole = j; }
            }
            slots[hole] = 0;
        }
        void resize(size_t count) {
            uint32_t* old = slots;
            allocate(count);
            std::free(old);
            for (size_t record = 0; record < records.size(); ++record) index(record);
        }
    };
    """
    cdef struct RowRecord "CqelsRowRecord":
        int64_t leaf
        PyObject* group
        uintptr_t handles
    cdef cppclass RowRecords "CqelsRowRecords":
        size_t size()
        RowRecord& at(size_t)
        bint full()
        Py_ssize_t find(int64_t)
        void add(const RowRecord&) except +
        RowRecord take(size_t) except +
        void clear() except +
