# distutils: language = c++
"""The triples ``read_ntriples`` read, as the term dictionary takes them (see _reader.pyx)."""

from libcpp.string cimport string
from libcpp.vector cimport vector


cdef class TripleForms:
    # The N-Triples form of every term, three per triple, one after the other; ends[i] is where the
    # i-th form ends in data.
    cdef string data
    cdef vector[size_t] ends
