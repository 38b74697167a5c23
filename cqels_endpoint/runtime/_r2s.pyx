# distutils: language = c++
"""Compiled R2S writers: the twins of ``engine.emission``'s ``BindingsWriterPython`` and
``TemplateWriterPython`` (the same text for the same rows). The text of each term id is written once
from its term and kept, UTF-8, in a C++ hash map by id; an emission's rows are written into one C++
string, read once into the Python text: no per-row or per-field Python string on the way.
``RowDecoder``, the twin of ``RowDecoderPython``, decodes rows of ids into solution mappings for the
subscribers that read terms, through the compiled dictionary's C decode."""

from cython.operator cimport dereference as deref
from libc.stdint cimport int64_t
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set
from libcpp.vector cimport vector

import json

import pyoxigraph as ox

from cqels_endpoint.runtime._dictionary cimport TermDictionary

from cqels_endpoint.runtime.term_kinds import TermKind
from cqels_endpoint.runtime.term_text import ntriples_term, template_part, term_json

# Template positions (term_text.template_part): a row's column, a blank node, a constant.
cdef enum:
    VARIABLE = 0
    BLANK = 1
    CONSTANT = 2

# Term kinds as emission.TemplateWriterPython reads them from an id's type bits (term_kinds.py).
cdef enum:
    TYPE_SHIFT = 58
    TYPE_MASK = 0x1F
    KIND_IRI = 0
    KIND_BLANK_NODE = 1
    KIND_OTHER = -1


# Texts an _IdTexts holds before it first prunes (emission.PRUNE_FLOOR).
cdef enum:
    PRUNE_FLOOR = 1 << 12


cdef class _IdTexts:
    """A text per term id (emission._IdTexts), bounded by the live ids it holds: when it reaches its
    limit it keeps only the texts of ids whose dictionary entry lives, and clears when those fill
    over half of ``capacity``."""

    cdef object _dictionary
    cdef TermDictionary _compiled  # None when the dictionary is the twin
    cdef object _write
    cdef unordered_map[int64_t, string] _texts
    cdef size_t _capacity
    cdef size_t _limit

    def __init__(self, dictionary, write, size_t capacity):
        self._dictionary = dictionary
        self._compiled = dictionary if isinstance(dictionary, TermDictionary) else None
        self._write = write
        self._capacity = capacity
        self._limit = min(capacity, <size_t>PRUNE_FLOOR)

    def __len__(self):
        return self._texts.size()

    cdef const string* text(self, int64_t term_id) except NULL:
        cdef unordered_map[int64_t, string].iterator found = self._texts.find(term_id)
        if found != self._texts.end():
            return &deref(found).second
        cdef string text = (<str>self._write(self._dictionary.decode(term_id))).encode("utf-8")
        if self._texts.size() >= self._limit:
            self._prune()
        self._texts[term_id] = text
        return &self._texts[term_id]

    cdef int _prune(self) except -1:
        cdef vector[int64_t] dead
        cdef int64_t term_id
        for item in self._texts:
            term_id = item.first
            if not self._live(term_id):
                dead.push_back(term_id)
        for term_id in dead:
            self._texts.erase(term_id)
        if 2 * self._texts.size() > self._capacity:
            self._texts.clear()
        self._limit = min(self._capacity, max(<size_t>PRUNE_FLOOR, 2 * self._texts.size()))
        return 0

    cdef bint _live(self, int64_t term_id) except -1:
        # Inline ids (negative) are dropped too: one text per distinct value would pile up as well.
        if term_id < 0:
            return False
        if self._compiled is not None:
            return self._compiled._entry(term_id) != NULL
        return self._dictionary.refcount(term_id) > 0


cdef class BindingsWriter:
    """Rows of term ids as the JSON text of a SPARQL 1.1 JSON ``bindings`` array (see
    emission.BindingsWriterPython)."""

    cdef vector[string] _keys
    cdef readonly _IdTexts _texts  # readable for the tests of its bound

    def __init__(self, dictionary, schema, capacity=1 << 16):
        for name in schema:
            self._keys.push_back((json.dumps(name, ensure_ascii=False) + ": ").encode("utf-8"))
        self._texts = _IdTexts(dictionary, lambda term: json.dumps(term_json(term), ensure_ascii=False), capacity)

    def write(self, rows):
        cdef string out = b"["
        cdef size_t column, width = self._keys.size()
        cdef bint first_row = True, first_field
        cdef tuple values
        for row in rows:
            values = tuple(row)
            if not first_row:
                out.append(b", ")
            first_row = False
            out.append(b"{")
            first_field = True
            for column in range(min(width, <size_t>len(values))):
                value = values[column]
                if value is None:
                    continue
                if not first_field:
                    out.append(b", ")
                first_field = False
                out.append(self._keys[column])
                out.append(self._texts.text(value)[0])
            out.append(b"}")
        out.append(b"]")
        return out.decode("utf-8")


cdef struct Part:
    int what  # VARIABLE, BLANK or CONSTANT
    int column  # VARIABLE: the row's column
    int blank  # BLANK: the label's index among the template's blank nodes
    int kind  # CONSTANT: KIND_IRI, KIND_BLANK_NODE or KIND_OTHER
    bint term  # CONSTANT: whether it is a term at all (an ill-formed literal is not)
    string text  # CONSTANT: its N-Triples text


cdef int kind_of(int64_t term_id):
    if term_id < 0:
        return KIND_OTHER  # an inline id is a literal
    cdef int code = (term_id >> TYPE_SHIFT) & TYPE_MASK
    return code if code == KIND_IRI or code == KIND_BLANK_NODE else KIND_OTHER


cdef class TemplateWriter:
    """A CONSTRUCT template on rows of term ids as N-Triples (see emission.TemplateWriterPython)."""

    cdef vector[vector[Part]] _template
    cdef int _blanks
    cdef readonly _IdTexts _texts  # readable for the tests of its bound

    def __init__(self, dictionary, schema, template, capacity=1 << 16):
        positions = {name: i for i, name in enumerate(schema)}
        self._texts = _IdTexts(dictionary, ntriples_term, capacity)
        labels = {}
        cdef vector[Part] parts
        cdef Part part
        for pattern in template:
            parts.clear()
            for term in (pattern.subject, pattern.predicate, pattern.object):
                what, value, kind = template_part(term, positions)
                part.what, part.column, part.blank, part.kind, part.term = what, 0, 0, KIND_OTHER, True
                part.text = b""
                if what == VARIABLE:
                    part.column = value
                elif what == BLANK:
                    part.blank = labels.setdefault(value, len(labels))
                    part.kind = KIND_BLANK_NODE
                elif value is None:
                    part.term = False
                else:
                    part.text = value.encode("utf-8")
                    part.kind = KIND_IRI if kind is TermKind.IRI else KIND_BLANK_NODE if kind is TermKind.BLANK_NODE else KIND_OTHER
                parts.push_back(part)
            self._template.push_back(parts)
        self._blanks = len(labels)

    def write(self, rows):
        cdef string out, line
        cdef unordered_set[string] seen
        cdef vector[string] fresh
        cdef size_t p
        cdef int position, kind
        cdef bint formed
        cdef tuple values
        cdef const string* text
        cdef Part* part
        for row in rows:
            values = tuple(row)
            fresh.assign(self._blanks, b"")  # fresh blank nodes per row, made when first used
            for p in range(self._template.size()):
                line.clear()
                formed = True
                for position in range(3):
                    part = &self._template[p][position]
                    if part.what == VARIABLE:
                        value = values[part.column]
                        if value is None:
                            formed = False
                            break
                        kind = kind_of(value)
                        text = self._texts.text(value)
                    elif part.what == BLANK:
                        if fresh[part.blank].empty():
                            fresh[part.blank] = str(ox.BlankNode()).encode("utf-8")
                        kind = KIND_BLANK_NODE
                        text = &fresh[part.blank]
                    else:
                        if not part.term:
                            formed = False
                            break
                        kind = part.kind
                        text = &part.text
                    if (position == 0 and kind == KIND_OTHER) or (position == 1 and kind != KIND_IRI):
                        formed = False
                        break
                    if position:
                        line.append(b" ")
                    line.append(text[0])
                if formed:
                    line.append(b" .\n")
                    if seen.insert(line).second:
                        out.append(line)
        return out.decode("utf-8")


cdef enum:
    INLINE_TERMS = 1 << 12


cdef class RowDecoder:
    """Rows of term ids (aligned with ``schema``, None for unbound) as solution mappings (see
    emission.RowDecoderPython): one dict per row, each id decoded by the compiled dictionary in C
    (by its ``decode`` for the twin dictionary)."""

    cdef object _dictionary
    cdef TermDictionary _compiled  # None when the dictionary is the twin
    cdef tuple _schema
    cdef dict _kept  # the last snapshot's rows → their mappings
    # Inline ids (numbers, dates, booleans) → their literals: the dictionary builds a new literal
    # at each decode of one, and an id is its value, so a kept literal never goes stale. Bounded
    # like _IdTexts (cleared when full).
    cdef dict _inline

    def __init__(self, dictionary, schema):
        self._dictionary = dictionary
        self._compiled = dictionary if isinstance(dictionary, TermDictionary) else None
        self._schema = tuple(schema)
        self._kept = {}
        self._inline = {}

    cdef object _term(self, object value):
        cdef int64_t term_id = value
        if term_id < 0:
            term = self._inline.get(value)
            if term is None:
                term = self._dictionary.decode(value)
                if len(self._inline) >= INLINE_TERMS:
                    self._inline.clear()
                self._inline[value] = term
            return term
        if self._compiled is not None:
            return self._compiled._decode(term_id)
        return self._dictionary.decode(value)

    cpdef dict decode(self, row):
        """A row as a solution mapping (its unbound columns left out)."""
        cdef tuple values = row if type(row) is tuple else tuple(row)
        cdef dict mapping = {}
        cdef Py_ssize_t column, width = min(len(self._schema), len(values))
        for column in range(width):
            value = values[column]
            if value is not None:
                mapping[self._schema[column]] = self._term(value)
        return mapping

    def decode_all(self, rows):
        """Every row decoded."""
        return [self.decode(row) for row in rows]

    def snapshot(self, rows):
        """Γ at an evaluation (RSTREAM): each distinct row decoded once while it stays in Γ, its
        mapping shared by the snapshots that list it."""
        cdef dict previous = self._kept, current = {}
        cdef list mappings = []
        for row in rows:
            # Most rows were in the last snapshot: two lookups each (a row listed twice, a bag's
            # duplicate, is found in ``current`` the second time).
            mapping = previous.get(row)
            if mapping is None:
                mapping = current.get(row)
                if mapping is None:
                    mapping = self.decode(row)
            current[row] = mapping
            mappings.append(mapping)
        self._kept = current
        return mappings
