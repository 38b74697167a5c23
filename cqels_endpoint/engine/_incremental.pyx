# distutils: language = c++
"""Compiled window entry of the incremental evaluator: the twin of ``IncrementalEvaluator.on_insert``
and ``on_expire`` (``incremental.py``, read them for the semantics) for a plan without SEQ event
patterns, the calls a stream triple makes entering and leaving its pattern's window buffer. The
event feed (``runtime._feed``) calls them from C: no Python frame per triple between the feed and
the compiled window buffer. ``release_rows`` is the twin of ``incremental.release_rows_python``."""

from libc.stdint cimport int64_t

from cqels_endpoint.runtime._dictionary cimport TermDictionary


cdef class WindowEntry:
    """The window buffers of one evaluator's stream patterns (by pattern id) and its compiled term
    dictionary, which holds a reference to each id of a copy while its buffer keeps it."""

    cdef TermDictionary _dictionary
    cdef dict _windows

    def __init__(self, TermDictionary dictionary, dict windows):
        self._dictionary = dictionary
        self._windows = windows

    def insert(self, pattern_id, ids, t, seq):
        """``IncrementalEvaluator.on_insert``: copy ``seq`` of ``ids`` enters its pattern's window."""
        for term_id in ids:
            self._dictionary._incref(term_id)
        self._windows[pattern_id].insert(seq, ids)

    def expire(self, pattern_id, seq):
        """``IncrementalEvaluator.on_expire``: copy ``seq`` leaves its pattern's window."""
        self._windows[pattern_id].expire(seq)


def release_rows(TermDictionary dictionary, list rows):
    """Drops one reference to each id of ``rows`` (None: an unbound column), in C."""
    for ids in rows:
        for value in ids:
            if value is not None:
                dictionary._decref(<int64_t>value)
