# distutils: language = c++
"""C-level state of the compiled event feed (see _feed.pyx; twin: feed.EventFeedPython)."""


cdef class EventFeed:
    cdef list states  # by pattern id
    cdef object on_insert
    cdef object on_expire
