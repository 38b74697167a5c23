# distutils: language = c++
"""Compiled term dictionary: the twin of ``encoding.TermDictionaryPython`` (same ids, same
reference counts, same errors), keyed by the N-Triples form of each term instead of by pyoxigraph
objects. The id layout and the reference-count contract are documented in ``runtime/encoding.py``.

Storage. Each entry is one block: its id, its reference count, the length of its form and the
form itself (``<http://…>``, ``_:b1``, ``"v"@en``, ``"v"^^<…>``, ``<<( s p o )>>``, exactly as
``str()`` writes the term), rounded up to 8 bytes and carved from 64 KiB slabs (``Slabs``, in the
``.pxd``: a free list per size reuses released blocks), so a 34-character IRI costs 56 bytes and a
7-character literal 32 (malloc would take 64 and 48); forms over 240 bytes get a block of their own.
Two open-addressing tables of pointers index the entries, by form (SipHash of the form, ``_Py_HashBytes``: the hash
CPython keys its own ``str``s with, seeded per process, so crafted input cannot make the probes
long) and by id; both use linear probing with backward-shift deletion, so no tombstones pile up as
windows slide. No Python object is kept per entry: ``decode`` builds the pyoxigraph term from the
form the first time an id is decoded and keeps it while the entry lives (building a ``NamedNode``
validates its IRI, which costs more than a lookup), so terms that are only stored and matched —
most window contents — never become Python objects.

Literals whose datatype and lexical form are inlined (``encoding``) are recognised on the form
itself, with the byte-level codec of ``_encoding.pyx``. Every term is keyed by the form
pyoxigraph's Store gives it (``canonical``): inline ids the Store would rewrite are rewritten on
their bits (``_canonical_inline``, as ``encoding.canonical_inline``), plain positional
``xsd:double``/``xsd:float`` forms as text (``_positional``, as ``canonical.positional_double``),
and other literals of ``canonical.CANONICALISED`` datatypes, and quoted triples holding XSD-typed
literals, through ``canonical.canonical_form``.

Bulk: ``encode_triples`` turns a sequence of pyoxigraph triples, or the ``TripleForms`` read from
N-Triples text by ``read_ntriples`` (``_reader.pyx``), into one ``array('q')`` of ids, three per
triple, each holding one reference; given a stream's predicate filter it probes each predicate's
form once and skips the triple, or takes the reference on the entry it found.
"""

from cpython.array cimport array, clone, resize
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.stdint cimport UINT32_MAX, int64_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy
from libcpp.string cimport string

from cqels_endpoint.runtime._encoding cimport datatype_code, decode_inline, inline_lexical
from cqels_endpoint.runtime._reader cimport TripleForms
from cqels_endpoint.runtime._slots cimport GOLDEN
from cqels_endpoint.runtime._slots cimport slot_distance as _distance
from cqels_endpoint.runtime._slots cimport slot_home as _home
from cqels_endpoint.runtime._slots cimport slot_next as _next

import pyoxigraph as ox

from cqels_endpoint.runtime.canonical import CANONICALISED, DOUBLE_DIGITS, FLOAT_DIGITS, POSITIONAL_LENGTH, canonical_form
from cqels_endpoint.runtime.term_kinds import kind_of

cdef extern from "Python.h":
    Py_hash_t _Py_HashBytes(const void* data, Py_ssize_t length)
    void PyObject_GC_UnTrack(void* op)

cdef extern from "<string.h>":
    void* memmem(const void* haystack, size_t n, const void* needle, size_t m) noexcept nogil

cdef extern from *:
    """
    #define CQELS_DICT_VALUE_MASK ((int64_t)((1ULL << 58) - 1))
    #define CQELS_DICT_TYPE_BITS ((int64_t)(0x1FULL << 58))
    #define CQELS_DICT_DECIMAL_BIAS ((int64_t)(1LL << 53))
    """
    const int64_t VALUE_MASK "CQELS_DICT_VALUE_MASK"
    const int64_t TYPE_BITS "CQELS_DICT_TYPE_BITS"
    const int64_t DECIMAL_BIAS "CQELS_DICT_DECIMAL_BIAS"

include "_inline_layout.pxi"

DEF IRI = 0
DEF BLANK_NODE = 1
DEF LITERAL = 2
DEF TRIPLE = 3
DEF TAG_MASK = 7  # entries are aligned to 8 bytes (Slabs, malloc): the low 3 bits of a form-table
                  # slot hold low hash bits, so most probes skip another entry without reading it
DEF MIN_CAPACITY = 16
DEF TZ_PLUS_ZERO = TZ_OFFSET + MAX_OFFSET_MINUTES  # the timezone code of "+00:00"
DEF XSD_LENGTH = 33  # len("http://www.w3.org/2001/XMLSchema#")


cdef object _NamedNode = ox.NamedNode
cdef object _BlankNode = ox.BlankNode
cdef object _Literal = ox.Literal
cdef object _Triple = ox.Triple
cdef object _Quad = ox.Quad
cdef object _array_template = array("q")
cdef object _LTR = ox.BaseDirection.LTR
cdef object _RTL = ox.BaseDirection.RTL
cdef bytes _XSD_TYPED = b'"^^<http://www.w3.org/2001/XMLSchema#'
cdef int _DOUBLE_DIGITS = DOUBLE_DIGITS
cdef int _FLOAT_DIGITS = FLOAT_DIGITS
cdef Py_ssize_t _POSITIONAL_LENGTH = POSITIONAL_LENGTH


cdef inline const char* _form(const Entry* entry) noexcept nogil:
    return (<const char*>entry) + sizeof(Entry)


cdef inline uint64_t _hash_form(const char* form, Py_ssize_t n) noexcept:
    return <uint64_t>_Py_HashBytes(form, n)


cdef inline int _kind_of_form(const char* form, Py_ssize_t n) noexcept nogil:
    if form[0] == c'"':
        return LITERAL
    if form[0] == c'_':
        return BLANK_NODE
    if n > 3 and form[1] == c'<' and form[2] == c'(':
        return TRIPLE
    return IRI


cdef Py_ssize_t _literal_end(const char* form, Py_ssize_t n) noexcept nogil:
    """The position of the quote that closes the lexical form of a literal's N-Triples form."""
    cdef Py_ssize_t i = 1
    while i < n:
        if form[i] == c'\\':
            i += 2
            continue
        if form[i] == c'"':
            return i
        i += 1
    return n


cdef inline int64_t _canonical_inline(int64_t term_id) noexcept nogil:
    """The inline id of the Store's form of an inline literal (``encoding.canonical_inline``)."""
    cdef int64_t code = (term_id >> TYPE_SHIFT) & 0x1F
    cdef int64_t field, scale, unscaled
    if code == INLINE_INTEGER or code == INLINE_BOOLEAN:
        return term_id
    if code == INLINE_DECIMAL:
        field = term_id & VALUE_MASK
        scale = field & 0xF
        unscaled = (field >> 4) - DECIMAL_BIAS
        if scale == 0 or unscaled % 10 != 0:
            return term_id
        while scale and unscaled % 10 == 0:
            unscaled = unscaled // 10
            scale -= 1
        return (term_id & ~VALUE_MASK) | (((unscaled + DECIMAL_BIAS) << 4) | scale)
    if code == INLINE_DATETIME:
        if (term_id & TZ_MASK) == TZ_PLUS_ZERO:
            return (term_id & ~(<int64_t>TZ_MASK)) | TZ_UTC
        return term_id
    return term_id & ~TYPE_BITS  # a type derived from xsd:integer: the Store types it xsd:integer


cdef int _positional(const char* s, Py_ssize_t n, int max_digits, string& out) noexcept:
    """Writes the Store's form of a plain positional xsd:double/xsd:float lexical form (at most
    ``max_digits`` significant digits) to ``out`` and returns 1; 0 for any other form (see
    ``canonical.positional_double``)."""
    cdef Py_ssize_t i = 0, whole, whole_end, fraction, fraction_end, significant
    if n == 0 or n > _POSITIONAL_LENGTH:
        return 0
    if s[0] == c'+' or s[0] == c'-':
        i = 1
    whole = i
    while i < n and c'0' <= s[i] <= c'9':
        i += 1
    whole_end = fraction = fraction_end = i
    if whole_end == whole:
        return 0
    if i < n:
        if s[i] != c'.':
            return 0
        i += 1
        fraction = i
        while i < n and c'0' <= s[i] <= c'9':
            i += 1
        if i != n or i == fraction:
            return 0
        fraction_end = n
    while whole < whole_end - 1 and s[whole] == c'0':
        whole += 1
    while fraction_end > fraction and s[fraction_end - 1] == c'0':
        fraction_end -= 1
    # Significant digits: those of whole and fraction but the zeros before the first non-zero one
    # (a whole part "0", leading zeros of the fraction) and, without a fraction, after the last.
    significant = (whole_end - whole) + (fraction_end - fraction)
    if s[whole] == c'0':
        significant -= 1
        i = fraction
        while i < fraction_end and s[i] == c'0':
            significant -= 1
            i += 1
    elif fraction_end == fraction:
        i = whole_end
        while s[i - 1] == c'0':
            significant -= 1
            i -= 1
    if significant > max_digits:
        return 0
    out.clear()
    if s[0] == c'-':
        out.push_back(c'-')
    out.append(s + whole, whole_end - whole)
    if fraction_end > fraction:
        out.push_back(c'.')
        out.append(s + fraction, fraction_end - fraction)
    return 1


cdef inline int64_t _take(Entry* entry) except? -1:
    """The id of a live entry, taking one reference (as ``TermDictionary._intern`` does for a term it finds)."""
    if entry.refs == UINT32_MAX:
        raise OverflowError(f"term id {entry.id} holds {entry.refs} references, the most an entry can")
    entry.refs += 1
    return entry.id


cdef class TermDictionary:
    """Term ↔ id for one engine, with reference-counted entries (see ``runtime.encoding``)."""

    def __cinit__(self):
        self._count = 0
        self._next_serial = 0
        self._allocate(MIN_CAPACITY)
        self._decoded = {}
        self._datatypes = {}

    def __dealloc__(self):
        cdef size_t i
        if self._by_id != NULL:
            for i in range(self._capacity):
                if self._by_id[i] != NULL and not Slabs.slabbed(sizeof(Entry) + self._by_id[i].length):
                    free(self._by_id[i])  # the slabs go with ``_slabs``
        free(self._by_id)
        free(self._by_form)

    cdef int _allocate(self, size_t capacity) except -1:
        self._by_form = <uintptr_t*>calloc(capacity, sizeof(uintptr_t))
        self._by_id = <Entry**>calloc(capacity, sizeof(Entry*))
        if self._by_form == NULL or self._by_id == NULL:
            raise MemoryError()
        self._capacity = capacity
        return 0

    # ------------------------------------------------------------------ the two tables

    cdef size_t _id_home(self, int64_t term_id) noexcept nogil:
        return _home(<uint64_t>term_id * GOLDEN, self._capacity)

    cdef Py_ssize_t _find_form(self, const char* form, Py_ssize_t length, uint64_t h) noexcept:
        """The slot holding ``form``, or ``-1 - slot`` of the empty slot where it would go."""
        cdef size_t n = self._capacity
        cdef size_t i = _home(h, n)
        cdef uintptr_t slot, tag = h & TAG_MASK
        cdef Entry* entry
        while True:
            slot = self._by_form[i]
            if slot == 0:
                return -1 - <Py_ssize_t>i
            if (slot & TAG_MASK) == tag:
                entry = <Entry*>(slot & ~(<uintptr_t>TAG_MASK))
                if entry.length == length and memcmp(_form(entry), form, length) == 0:
                    return i
            i = _next(i, n)

    cdef Entry* _entry(self, int64_t term_id) noexcept:
        cdef size_t n = self._capacity
        cdef size_t i = self._id_home(term_id)
        cdef Entry* entry
        while True:
            entry = self._by_id[i]
            if entry == NULL or entry.id == term_id:
                return entry
            i = _next(i, n)

    cdef void _place(self, Entry* entry, uint64_t h) noexcept:
        cdef size_t n = self._capacity
        cdef size_t i = _home(h, n)
        while self._by_form[i] != 0:
            i = _next(i, n)
        self._by_form[i] = (<uintptr_t>entry) | (h & TAG_MASK)
        i = self._id_home(entry.id)
        while self._by_id[i] != NULL:
            i = _next(i, n)
        self._by_id[i] = entry

    cdef int _resize(self, size_t capacity) except -1:
        cdef uintptr_t* old_by_form = self._by_form
        cdef Entry** old_by_id = self._by_id
        cdef size_t old_capacity = self._capacity, i
        cdef Entry* entry
        self._allocate(capacity)
        for i in range(old_capacity):
            entry = old_by_id[i]
            if entry != NULL:
                self._place(entry, _hash_form(_form(entry), entry.length))
        free(old_by_form)
        free(old_by_id)
        return 0

    cdef void _erase(self, Entry* entry) noexcept:
        # Backward-shift deletion in both tables: the slots after the hole move back when their
        # home allows it, so probes never meet tombstones.
        cdef size_t n = self._capacity
        cdef uint64_t h = _hash_form(_form(entry), entry.length)
        cdef size_t hole = _home(h, n), j, home
        while (self._by_form[hole] & ~(<uintptr_t>TAG_MASK)) != <uintptr_t>entry:
            hole = _next(hole, n)
        j = hole
        cdef Entry* other
        while True:
            j = _next(j, n)
            if self._by_form[j] == 0:
                break
            other = <Entry*>(self._by_form[j] & ~(<uintptr_t>TAG_MASK))
            home = _home(_hash_form(_form(other), other.length), n)
            if _distance(home, j, n) >= _distance(hole, j, n):
                self._by_form[hole] = self._by_form[j]
                hole = j
        self._by_form[hole] = 0
        hole = self._id_home(entry.id)
        while self._by_id[hole] != entry:
            hole = _next(hole, n)
        j = hole
        while True:
            j = _next(j, n)
            if self._by_id[j] == NULL:
                break
            home = self._id_home(self._by_id[j].id)
            if _distance(home, j, n) >= _distance(hole, j, n):
                self._by_id[hole] = self._by_id[j]
                hole = j
        self._by_id[hole] = NULL

    # ------------------------------------------------------------------ forms

    cdef int _form_of(self, object term) except -1:
        """Writes the N-Triples form of ``term`` to ``_scratch``; returns its kind."""
        cdef type cls = type(term)
        cdef Py_ssize_t n
        cdef const char* text
        cdef str held  # keeps alive the string ``text`` points into
        if cls is _NamedNode:
            held = term.value
            text = PyUnicode_AsUTF8AndSize(held, &n)
            self._scratch.assign(b"<", 1)
            self._scratch.append(text, n)
            self._scratch.append(b">", 1)
            return IRI
        if cls is _Literal:
            held = str(term)
            text = PyUnicode_AsUTF8AndSize(held, &n)
            self._scratch.assign(text, n)
            return LITERAL
        if cls is _BlankNode:
            held = term.value
            text = PyUnicode_AsUTF8AndSize(held, &n)
            self._scratch.assign(b"_:", 2)
            self._scratch.append(text, n)
            return BLANK_NODE
        if cls is _Triple:
            held = str(term)
            text = PyUnicode_AsUTF8AndSize(held, &n)
            self._scratch.assign(b"<<( ", 4)
            self._scratch.append(text, n)
            self._scratch.append(b" )>>", 4)
            return TRIPLE
        msg = (
            f"cannot encode {term!r}: term ids are for pyoxigraph NamedNode, BlankNode, Literal "
            "and Triple (convert query constants with cqels_endpoint.oxigraph.terms.constant_term)"
        )
        raise TypeError(msg)

    cdef int64_t _canonical(self, const char** form, Py_ssize_t* n, int kind) except? -1:
        """The inline id of the Store's form of the term of this form, or 0 with ``form`` and ``n``
        set to the Store's form (the form itself, or ``_canon`` holding the rewritten one)."""
        cdef const char* f = form[0]
        cdef Py_ssize_t size = n[0], end, datatype_length
        cdef const char* datatype
        cdef int code, digits = 0
        cdef int64_t inline
        if kind == TRIPLE:
            if memmem(f, size, <const char*>_XSD_TYPED, len(_XSD_TYPED)) == NULL:
                return 0
        elif kind != LITERAL:
            return 0
        else:
            end = _literal_end(f, size)
            if end + 5 > size or f[end + 1] != c'^' or f[end + 2] != c'^' or f[size - 1] != c'>':
                return 0  # plain or language-tagged: kept as written
            datatype = f + end + 4
            datatype_length = size - end - 5
            if datatype_length <= XSD_LENGTH or memcmp(datatype, <const char*>_XSD_TYPED + 4, XSD_LENGTH) != 0:
                return 0
            # Escapes never occur in an inlined or positional lexical form, so the bytes between
            # the quotes are the form as written.
            code = datatype_code(datatype, datatype_length)
            if code >= 0:
                inline = inline_lexical(code, f + 1, end - 1)
                if inline != 0:
                    return _canonical_inline(inline)
                if code > INLINE_DATETIME:  # outside its type's range: the Store types it xsd:integer
                    inline = inline_lexical(INLINE_INTEGER, f + 1, end - 1)
                    if inline != 0:
                        return inline
            elif datatype_length == XSD_LENGTH + 6 and memcmp(datatype + XSD_LENGTH, b"double", 6) == 0:
                digits = _DOUBLE_DIGITS
            elif datatype_length == XSD_LENGTH + 5 and memcmp(datatype + XSD_LENGTH, b"float", 5) == 0:
                digits = _FLOAT_DIGITS
            if digits and _positional(f + 1, end - 1, digits, self._lexical):
                if <Py_ssize_t>self._lexical.size() == end - 1 and memcmp(self._lexical.data(), f + 1, end - 1) == 0:
                    return 0
                self._canon.assign(b'"', 1)
                self._canon.append(self._lexical)
                self._canon.append(f + end, size - end)
                form[0] = self._canon.data()
                n[0] = self._canon.size()
                return 0
            if PyUnicode_DecodeUTF8(datatype, datatype_length, NULL) not in CANONICALISED:
                return 0
        cdef str canonical = canonical_form(PyUnicode_DecodeUTF8(f, size, NULL))
        cdef Py_ssize_t length
        cdef const char* text = PyUnicode_AsUTF8AndSize(canonical, &length)
        self._canon.assign(text, length)
        form[0] = self._canon.data()
        n[0] = length
        if kind == LITERAL:  # the Store's form may have an inline id ("01" is "1")
            end = _literal_end(text, length)
            if end + 5 <= length and text[end + 1] == c'^':
                code = datatype_code(text + end + 4, length - end - 5)
                if code >= 0:
                    return inline_lexical(code, text + 1, end - 1)
        return 0

    cdef int64_t _intern(self, const char* form, Py_ssize_t n, int kind) except? -1:
        """The id of the term of this form, taking one reference (creating its entry if needed)."""
        cdef int64_t inline = self._canonical(&form, &n, kind)
        if inline != 0:
            return inline
        cdef uint64_t h = _hash_form(form, n)
        cdef Py_ssize_t found = self._find_form(form, n, h)
        cdef Entry* entry
        if found >= 0:
            entry = <Entry*>(self._by_form[found] & ~(<uintptr_t>TAG_MASK))
            if entry.refs == UINT32_MAX:
                raise OverflowError(f"term id {entry.id} holds {entry.refs} references, the most an entry can")
            entry.refs += 1
            return entry.id
        if n > UINT32_MAX:
            raise OverflowError("a term of more than 4 GiB")
        if (self._count + 1) * 4 > self._capacity * 3:
            self._resize(self._capacity + self._capacity // 2)
        entry = <Entry*>self._slabs.allocate(sizeof(Entry) + n)
        if entry == NULL:
            raise MemoryError()
        entry.id = (<int64_t>kind << TYPE_SHIFT) | self._next_serial
        entry.refs = 1
        entry.length = <uint32_t>n
        memcpy(<char*>_form(entry), form, n)
        self._next_serial += 1
        self._count += 1
        self._place(entry, h)
        return entry.id

    cdef int64_t _encode(self, object term) except? -1:
        cdef int kind = self._form_of(term)
        return self._intern(self._scratch.data(), self._scratch.size(), kind)

    cdef object _lookup(self, object term):
        cdef type cls = type(term)
        if cls is not _NamedNode and cls is not _Literal and cls is not _BlankNode and cls is not _Triple:
            return None  # not a term: it has no id
        cdef int kind = self._form_of(term)
        cdef const char* form = self._scratch.data()
        cdef Py_ssize_t n = self._scratch.size()
        cdef int64_t inline = self._canonical(&form, &n, kind)
        if inline != 0:
            return inline
        cdef Py_ssize_t found = self._find_form(form, n, _hash_form(form, n))
        if found < 0:
            return None
        return (<Entry*>(self._by_form[found] & ~(<uintptr_t>TAG_MASK))).id

    cdef Entry* _live(self, int64_t term_id) except NULL:
        cdef Entry* entry = self._entry(term_id)
        if entry == NULL:
            msg = f"term id {term_id} has no dictionary entry (never issued, or released at refcount 0)"
            raise KeyError(msg)
        return entry

    cdef int _incref(self, int64_t term_id) except -1:
        if term_id < 0:
            return 0
        cdef Entry* entry = self._live(term_id)
        if entry.refs == UINT32_MAX:
            raise OverflowError(f"term id {term_id} holds {entry.refs} references, the most an entry can")
        entry.refs += 1
        return 0

    cdef int _decref(self, int64_t term_id) except -1:
        if term_id < 0:
            return 0
        cdef Entry* entry = self._live(term_id)
        entry.refs -= 1
        if entry.refs:
            return 0
        self._erase(entry)
        self._slabs.release(entry, sizeof(Entry) + entry.length)
        self._count -= 1
        if self._decoded:
            self._decoded.pop(term_id, None)
        if self._capacity > MIN_CAPACITY and self._count * 8 < self._capacity:
            self._resize(self._capacity // 4 if self._capacity >= 4 * MIN_CAPACITY else MIN_CAPACITY)
        return 0

    # ------------------------------------------------------------------ decoding

    cdef object _build(self, const Entry* entry):
        cdef const char* form = _form(entry)
        cdef Py_ssize_t n = entry.length, end
        cdef int kind = (entry.id >> TYPE_SHIFT) & 0x1F
        if kind == IRI:
            return _NamedNode(PyUnicode_DecodeUTF8(form + 1, n - 2, NULL))
        if kind == BLANK_NODE:
            return _BlankNode(PyUnicode_DecodeUTF8(form + 2, n - 2, NULL))
        if kind == TRIPLE:
            document = b"<urn:cqels:s> <urn:cqels:p> " + form[:n] + b" ."
            return next(iter(ox.parse(document, format=ox.RdfFormat.N_TRIPLES))).object
        end = _literal_end(form, n)
        value = _unescape(form + 1, end - 1)
        if end + 1 == n:
            return _Literal(value)
        if form[end + 1] == c'@':
            tag = PyUnicode_DecodeUTF8(form + end + 2, n - end - 2, NULL)
            language, _, direction = tag.partition("--")
            if direction:
                return _Literal(value, language=language, direction=_LTR if direction == "ltr" else _RTL)
            return _Literal(value, language=language)
        datatype_iri = PyUnicode_DecodeUTF8(form + end + 4, n - end - 5, NULL)
        datatype = self._datatypes.get(datatype_iri)
        if datatype is None:
            datatype = self._datatypes[datatype_iri] = _NamedNode(datatype_iri)
        return _Literal(value, datatype=datatype)

    cdef object _decode(self, int64_t term_id):
        if term_id < 0:
            return decode_inline(term_id)
        term = self._decoded.get(term_id)
        if term is not None:
            return term
        term = self._build(self._live(term_id))
        # Kept as long as the entry lives: out of the cyclic collector, as runtime.untracked says why
        # (a term refers to no Python object), so a dictionary of a million decoded terms adds
        # nothing to a full collection's walk.
        PyObject_GC_UnTrack(<void*>term)
        self._decoded[term_id] = term
        return term

    # ------------------------------------------------------------------ the public methods

    def __len__(self):
        """Number of live dictionary entries (inline terms have none)."""
        return self._count

    def __contains__(self, term):
        """True if the term has an id right now (inline terms always have one)."""
        return self._lookup(term) is not None

    def encode(self, term):
        """The id of ``term``, taking one reference to its entry (creating it if needed)."""
        return self._encode(term)

    def encode_many(self, terms):
        """``[encode(t) for t in terms]``: one reference taken per term."""
        return [self._encode(term) for term in terms]

    def encode_triples(self, triples, predicates=None):
        """The ids of a sequence of triples (pyoxigraph ``Triple``s or ``Quad``s, whose graph is
        ignored, or ``TripleForms``), three per triple in order, each holding one reference; nothing
        is taken if one is not a triple. With ``predicates`` (a set of ids), a triple whose predicate
        has none of them is left out and takes nothing: its terms get no entry."""
        cdef TripleForms forms
        cdef array ids
        cdef int64_t* out
        cdef Py_ssize_t i = 0, k, start, subject_end, predicate_end, end
        cdef const char* data
        cdef Entry* predicate = NULL
        # A stream's filter comes again and again, unchanged: its ids are copied once.
        if predicates is not None and (predicates is not self._kept or type(predicates) is not frozenset):
            self._kept_ids.clear()
            for term_id in predicates:
                self._kept_ids.insert(term_id)
            self._kept = predicates
        if isinstance(triples, TripleForms):
            forms = <TripleForms>triples
            ids = clone(_array_template, forms.ends.size(), False)
        else:
            ids = clone(_array_template, 3 * len(triples), False)
        out = <int64_t*>ids.data.as_longlongs
        try:
            if isinstance(triples, TripleForms):
                data = forms.data.data()
                for k in range(0, <Py_ssize_t>forms.ends.size(), 3):
                    start = 0 if k == 0 else forms.ends[k - 1]
                    subject_end, predicate_end, end = forms.ends[k], forms.ends[k + 1], forms.ends[k + 2]
                    if predicates is not None:
                        predicate = self._kept_entry(data + subject_end, predicate_end - subject_end)
                        if predicate == NULL:
                            continue
                    out[i] = self._intern(data + start, subject_end - start, _kind_of_form(data + start, subject_end - start))
                    i += 1
                    if predicates is None:
                        out[i] = self._intern(data + subject_end, predicate_end - subject_end, _kind_of_form(data + subject_end, predicate_end - subject_end))
                    else:
                        out[i] = _take(predicate)
                    i += 1
                    out[i] = self._intern(data + predicate_end, end - predicate_end, _kind_of_form(data + predicate_end, end - predicate_end))
                    i += 1
            else:
                for triple in triples:
                    if type(triple) is not _Triple and type(triple) is not _Quad:
                        raise TypeError(f"not a triple: {triple!r}")
                    if predicates is not None:
                        self._form_of((<object>triple).predicate)
                        predicate = self._kept_entry(self._scratch.data(), self._scratch.size())
                        if predicate == NULL:
                            continue
                    out[i] = self._encode((<object>triple).subject)
                    i += 1
                    out[i] = self._encode((<object>triple).predicate) if predicates is None else _take(predicate)
                    i += 1
                    out[i] = self._encode((<object>triple).object)
                    i += 1
        except BaseException:
            for k in range(i):
                self._decref(out[k])
            raise
        if i < len(ids):
            resize(ids, i)
        return ids

    cdef Entry* _kept_entry(self, const char* form, Py_ssize_t n) noexcept:
        """The entry of the predicate of this form (an IRI: never inline, kept as written) when the
        last filter ``encode_triples`` was given holds its id; NULL otherwise. Takes no reference:
        the entry stays while the filter's holder keeps one, and interning other terms moves no entry."""
        cdef Py_ssize_t found = self._find_form(form, n, _hash_form(form, n))
        if found < 0:
            return NULL
        cdef Entry* entry = <Entry*>(self._by_form[found] & ~(<uintptr_t>TAG_MASK))
        return entry if self._kept_ids.count(entry.id) else NULL

    def lookup(self, term):
        """The id of ``term`` without taking a reference; None if it is in no entry (and not inline)."""
        return self._lookup(term)

    def decode(self, term_id):
        """The term of an id; ``KeyError`` for a dictionary id whose entry was released."""
        return self._decode(term_id)

    def decode_row(self, ids):
        """The terms of a row of ids, in order."""
        return tuple([self._decode(term_id) for term_id in ids])

    def incref(self, term_id):
        """One more holder of ``term_id`` (no-op for inline ids)."""
        self._incref(term_id)

    def incref_many(self, ids):
        """``incref`` each id (a row entering a window, say)."""
        for term_id in ids:
            self._incref(term_id)

    def decref(self, term_id):
        """One holder fewer; the entry is released when none is left (no-op for inline ids)."""
        self._decref(term_id)

    def decref_many(self, ids):
        """``decref`` each id (a row leaving a window, say)."""
        for term_id in ids:
            self._decref(term_id)

    def refcount(self, term_id):
        """References held on a dictionary id (0 once released); inline ids report 0."""
        cdef int64_t value = term_id
        if value < 0:
            return 0
        cdef Entry* entry = self._entry(value)
        return 0 if entry == NULL else entry.refs

    def kind(self, term_id):
        """What an id stands for, read from its type bits alone (no lookup)."""
        return kind_of(term_id)


cdef object _unescape(const char* text, Py_ssize_t n):
    """The string an N-Triples string body stands for (ECHAR and UCHAR escapes)."""
    cdef Py_ssize_t i = 0, start = 0, digits, k
    cdef string out
    cdef uint32_t code
    cdef char c
    while i < n:
        if text[i] != c'\\':
            i += 1
            continue
        out.append(text + start, i - start)
        c = text[i + 1]
        if c == c'u' or c == c'U':
            digits = 4 if c == c'u' else 8
            code = 0
            for k in range(i + 2, i + 2 + digits):
                code = code * 16 + _hex(text[k])
            _append_utf8(out, code)
            i += 2 + digits
        else:
            out.push_back(_echar(c))
            i += 2
        start = i
    if start == 0:
        return PyUnicode_DecodeUTF8(text, n, NULL)
    out.append(text + start, n - start)
    return PyUnicode_DecodeUTF8(out.data(), out.size(), NULL)


cdef inline uint32_t _hex(char c) noexcept nogil:
    if c'0' <= c <= c'9':
        return c - c'0'
    if c'a' <= c <= c'f':
        return c - c'a' + 10
    return c - c'A' + 10


cdef inline char _echar(char c) noexcept nogil:
    if c == c't':
        return c'\t'
    if c == c'b':
        return c'\b'
    if c == c'n':
        return c'\n'
    if c == c'r':
        return c'\r'
    if c == c'f':
        return c'\f'
    return c  # \" \' \\ stand for themselves


cdef void _append_utf8(string& out, uint32_t code) noexcept:
    if code < 0x80:
        out.push_back(<char>code)
    elif code < 0x800:
        out.push_back(<char>(0xC0 | (code >> 6)))
        out.push_back(<char>(0x80 | (code & 0x3F)))
    elif code < 0x10000:
        out.push_back(<char>(0xE0 | (code >> 12)))
        out.push_back(<char>(0x80 | ((code >> 6) & 0x3F)))
        out.push_back(<char>(0x80 | (code & 0x3F)))
    else:
        out.push_back(<char>(0xF0 | (code >> 18)))
        out.push_back(<char>(0x80 | ((code >> 12) & 0x3F)))
        out.push_back(<char>(0x80 | ((code >> 6) & 0x3F)))
        out.push_back(<char>(0x80 | (code & 0x3F)))
