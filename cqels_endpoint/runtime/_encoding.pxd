# distutils: language = c++
"""Compiled inline-id codec; the id layout and its twin are in runtime/encoding.py.

The C functions read a lexical form as UTF-8 bytes, for the compiled term dictionary
(``_dictionary.pyx``), which inlines literals straight from their N-Triples form.
"""

from libc.stdint cimport int64_t


# The type bits of the inline type of a datatype IRI, or -1 when its literals are never inlined.
cdef int datatype_code(const char* iri, Py_ssize_t n) noexcept nogil
# The inline id of the lexical form of a literal of type bits ``code``; 0 (never an inline id, which
# is negative) when that form is not inlined.
cdef int64_t inline_lexical(int code, const char* lexical, Py_ssize_t n) noexcept nogil
cpdef object inline_id(object literal)
cpdef object decode_inline(object term_id)
