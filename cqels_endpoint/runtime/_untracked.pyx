"""Rows of pyoxigraph terms taken out of the cyclic garbage collector (``runtime.untracked``)."""

import pyoxigraph as ox

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)
    int PyObject_GC_IsTracked(object op)
    int PyObject_IS_GC(object op)

cdef object _NamedNode = ox.NamedNode
cdef object _BlankNode = ox.BlankNode
cdef object _Literal = ox.Literal
cdef object _Triple = ox.Triple


cdef inline bint _is_term(object value):
    cdef object kind = type(value)
    return kind is _NamedNode or kind is _Literal or kind is _BlankNode or kind is _Triple


def untrack_term(term):
    """``term``, no longer tracked by the collector when it is a pyoxigraph term; returned."""
    if _is_term(term):
        PyObject_GC_UnTrack(<void*>term)
    return term


def untrack_row(row):
    """``row``, untracked with its terms when it is a tuple of pyoxigraph terms and None; returned
    unchanged (and still tracked) when it holds anything else."""
    cdef object value
    if type(row) is not tuple:
        return row
    for value in <tuple>row:
        if value is not None and not _is_term(value):
            return row
    for value in <tuple>row:
        if value is not None:
            PyObject_GC_UnTrack(<void*>value)
    PyObject_GC_UnTrack(<void*>row)
    return row


def untrack_tuple(items):
    """``items``, untracked when it is a tuple whose every item is None, of a type the collector
    does not track, or an untracked tuple (a chunk of untracked rows, say); returned unchanged
    otherwise. CPython applies the same rule to a tuple at the first collection that sees it, which
    walks all its items then."""
    cdef object value
    if type(items) is not tuple:
        return items
    for value in <tuple>items:
        if PyObject_IS_GC(value) and (type(value) is not tuple or PyObject_GC_IsTracked(value)):
            return items
    PyObject_GC_UnTrack(<void*>items)
    return items
