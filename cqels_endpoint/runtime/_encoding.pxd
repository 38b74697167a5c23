# distutils: language = c++
"""Compiled inline-id codec; the id layout and its twin are in runtime/encoding.py."""

cpdef object inline_id(object literal)
cpdef object decode_inline(object term_id)
