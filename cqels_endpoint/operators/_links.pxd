# distutils: language = c++
"""Matches between the rows of two inputs, for the compiled negation and OPTIONAL: each match is one
node linked into both rows' lists, so either row reaches exactly its matches (oldest first) and
drops one in O(1) — nothing is searched or re-evaluated to retract a row.

A row embeds a :c:type:`Links` (its list, its owner, how many); :c:func:`link` appends a match to
both lists, :c:func:`unlink` removes it from both and frees it. Rows must not move while linked
(they are ``_idkeys.Table`` entries). Only declarations and inline functions: cimporting this file
adds no module to import.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t

cdef struct Link


cdef struct Links:                # the matches of one row
    Link* first
    Link* last
    void* owner                   # the row
    int64_t count


cdef struct Link:                 # one match
    Links* left                   # the lists it is in: the left row's…
    Links* right                  # …and the right row's
    Link* left_prev
    Link* left_next
    Link* right_prev
    Link* right_next


cdef inline Link* link(Links* left, Links* right) except NULL:
    """A new match of ``left`` and ``right``, last in both lists."""
    cdef Link* match = <Link*>PyMem_Malloc(sizeof(Link))
    if match == NULL:
        raise MemoryError()
    match.left = left
    match.right = right
    match.left_prev = left.last
    match.left_next = NULL
    if left.last != NULL:
        left.last.left_next = match
    else:
        left.first = match
    left.last = match
    match.right_prev = right.last
    match.right_next = NULL
    if right.last != NULL:
        right.last.right_next = match
    else:
        right.first = match
    right.last = match
    left.count += 1
    right.count += 1
    return match


cdef inline void free_right_list(Links* right) noexcept:
    """Frees every match of the right row ``right`` without unlinking: for a destructor that frees
    every right row's list, after which no left list is read."""
    cdef Link* match = right.first
    cdef Link* following
    while match != NULL:
        following = match.right_next
        PyMem_Free(match)
        match = following


cdef inline void unlink(Link* match) noexcept:
    """Removes ``match`` from both lists and frees it."""
    cdef Links* left = match.left
    cdef Links* right = match.right
    if match.left_prev != NULL:
        match.left_prev.left_next = match.left_next
    else:
        left.first = match.left_next
    if match.left_next != NULL:
        match.left_next.left_prev = match.left_prev
    else:
        left.last = match.left_prev
    if match.right_prev != NULL:
        match.right_prev.right_next = match.right_next
    else:
        right.first = match.right_next
    if match.right_next != NULL:
        match.right_next.right_prev = match.right_prev
    else:
        right.last = match.right_prev
    left.count -= 1
    right.count -= 1
    PyMem_Free(match)
