# distutils: language = c++
"""A compiled reader for the plain N-Triples of stream events, straight to the terms' N-Triples forms.

``read_ntriples(text)`` reads a body made only of statements ``S P O .`` whose terms take the
simple shapes below, separated by white space and ``#`` comments, and returns their terms as
``TripleForms``: each term's form exactly as ``str()`` of the pyoxigraph term writes it, which is
the key of the compiled term dictionary (``_dictionary.pyx``), so no Python object is made per
triple. For anything else it returns None and the caller parses the text with pyoxigraph, which
gives the same triples or the error with its line and column: the reader only accepts what it is
certain pyoxigraph's Turtle parser reads to the same terms (tests/runtime/test_reader.py checks
that against pyoxigraph on random text). As N-Triples (``one_per_line``) a statement must also sit
on one line of its own, as pyoxigraph's N-Triples parser requires.

- IRIs: ASCII, absolute (``scheme:``), made of RFC 3987's unreserved and reserved characters and
  ``%HH``, with an optional ``//authority`` whose port is digits, no dot segment (``/.``, which a
  base IRI would remove) and no IP literal;
- blank nodes ``_:[A-Za-z0-9_][A-Za-z0-9_-]*`` (only when labels are kept as written);
- literals whose lexical form has no escape, no control character and no U+FFFE/U+FFFF, with no
  suffix, a language tag ``ll[l][-Ssss][-RR|-999]`` (lower-cased, as pyoxigraph does), or a
  datatype IRI as above (``xsd:string`` dropped, as pyoxigraph does; not ``rdf:langString`` or
  ``rdf:dirLangString``).
"""

from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.string cimport memcmp
from libcpp.string cimport string


cdef class TripleForms:
    """The terms of the triples of one event, in order, as N-Triples forms (read by ``read_ntriples``)."""

    def __len__(self):
        """The number of triples."""
        return self.ends.size() // 3

    def forms(self):
        """The forms, three per triple (for tests and debugging)."""
        cdef list out = []
        cdef size_t start = 0, end
        for end in self.ends:
            out.append(self.data.substr(start, end - start).decode("utf-8"))
            start = end
        return out


cdef bytes _XSD_STRING = b"^^<http://www.w3.org/2001/XMLSchema#string>"
cdef bytes _RDF_LANG_STRING = b"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>"
cdef bytes _RDF_DIR_LANG_STRING = b"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString>"


cdef inline bint _ends_with(const string& out, size_t start, bytes suffix) noexcept:
    """Whether ``out[start:]`` is ``suffix``."""
    cdef size_t n = len(suffix)
    return out.size() - start == n and memcmp(out.data() + start, <const char*>suffix, n) == 0


cdef struct Cursor:
    const unsigned char* text
    size_t n
    size_t at


cdef inline bint _alpha(unsigned char c) noexcept nogil:
    return (c'a' <= c <= c'z') or (c'A' <= c <= c'Z')


cdef inline bint _digit(unsigned char c) noexcept nogil:
    return c'0' <= c <= c'9'


cdef inline bint _hexdigit(unsigned char c) noexcept nogil:
    return _digit(c) or (c'a' <= c <= c'f') or (c'A' <= c <= c'F')


cdef inline bint _unreserved(unsigned char c) noexcept nogil:
    return _alpha(c) or _digit(c) or c == c'-' or c == c'.' or c == c'_' or c == c'~'


cdef inline bint _subdelim(unsigned char c) noexcept nogil:
    return (
        c == c'!' or c == c'$' or c == c'&' or c == c'\'' or c == c'(' or c == c')' or c == c'*'
        or c == c'+' or c == c',' or c == c';' or c == c'='
    )


cdef inline bint _label_char(unsigned char c) noexcept nogil:
    return _alpha(c) or _digit(c) or c == c'_' or c == c'-'


cdef bint _skip_space(Cursor* cursor) noexcept nogil:
    """Skips white space and comments; False at the end of the text."""
    cdef unsigned char c
    while cursor.at < cursor.n:
        c = cursor.text[cursor.at]
        if c == c' ' or c == c'\t' or c == c'\r' or c == c'\n':
            cursor.at += 1
        elif c == c'#':
            while cursor.at < cursor.n and cursor.text[cursor.at] != c'\n' and cursor.text[cursor.at] != c'\r':
                cursor.at += 1
        else:
            return True
    return False


cdef size_t _pchars(const unsigned char* s, size_t i, size_t end, bint extra) noexcept nogil:
    """The end of the run of pchars (plus ``/`` and, with ``extra``, ``?``) from ``i``; a bad ``%``
    escape stops it."""
    cdef unsigned char c
    while i < end:
        c = s[i]
        if _unreserved(c) or _subdelim(c) or c == c':' or c == c'@' or c == c'/' or (extra and c == c'?'):
            i += 1
        elif c == c'%' and i + 2 < end and _hexdigit(s[i + 1]) and _hexdigit(s[i + 2]):
            i += 3
        else:
            return i
    return i


cdef bint _valid_iri(const unsigned char* s, size_t n) noexcept nogil:
    """Whether ``s[:n]`` (between the angle brackets) is an IRI of the accepted shape."""
    cdef size_t i = 0, end, at
    if n == 0 or not _alpha(s[0]):
        return False
    while i < n and (_alpha(s[i]) or _digit(s[i]) or s[i] == c'+' or s[i] == c'-' or s[i] == c'.'):
        i += 1
    if i == n or s[i] != c':':
        return False
    i += 1
    if i < n and s[i] == c'.':
        return False
    if i + 1 < n and s[i] == c'/' and s[i + 1] == c'/':
        i += 2
        end = i
        while end < n and s[end] != c'/' and s[end] != c'?' and s[end] != c'#':
            end += 1
        # userinfo@host:port — the host and the user info are reg-names (with ``:`` in the user
        # info), the port digits.
        at = i
        while at < end and s[at] != c'@':
            at += 1
        if at < end:
            if _reg_name(s, i, at, True) != at:
                return False
            i = at + 1
        at = _reg_name(s, i, end, False)
        if at < end:
            if s[at] != c':':
                return False
            at += 1
            while at < end and _digit(s[at]):
                at += 1
            if at != end:
                return False
        i = end
    i = _pchars(s, i, n, False)
    if i < n and s[i] == c'?':
        i = _pchars(s, i + 1, n, True)
    if i < n and s[i] == c'#':
        i = _pchars(s, i + 1, n, True)
    if i != n:
        return False
    for i in range(n - 1):
        if s[i] == c'/' and s[i + 1] == c'.':
            return False
    return True


cdef size_t _reg_name(const unsigned char* s, size_t i, size_t end, bint colon) noexcept nogil:
    cdef unsigned char c
    while i < end:
        c = s[i]
        if _unreserved(c) or _subdelim(c) or (colon and c == c':'):
            i += 1
        elif c == c'%' and i + 2 < end and _hexdigit(s[i + 1]) and _hexdigit(s[i + 2]):
            i += 3
        else:
            return i
    return i


cdef bint _iri(Cursor* cursor, string& out) noexcept:
    """An IRI at the cursor (``<`` … ``>``), appended to ``out`` as written."""
    cdef size_t start = cursor.at, i = cursor.at + 1
    if start >= cursor.n or cursor.text[start] != c'<':
        return False
    while i < cursor.n and cursor.text[i] != c'>':
        if cursor.text[i] >= 0x80 or cursor.text[i] <= 0x20:
            return False
        i += 1
    if i == cursor.n or not _valid_iri(cursor.text + start + 1, i - start - 1):
        return False
    cursor.at = i + 1
    out.append(<const char*>cursor.text + start, cursor.at - start)
    return True


cdef bint _blank_node(Cursor* cursor, string& out) noexcept:
    cdef size_t start = cursor.at, i = cursor.at + 2
    cdef unsigned char after
    if i >= cursor.n or cursor.text[start] != c'_' or cursor.text[start + 1] != c':':
        return False
    if not _label_char(cursor.text[i]) or cursor.text[i] == c'-':
        return False
    while i < cursor.n and _label_char(cursor.text[i]):
        i += 1
    # A label may go on through a '.' (``_:a.b``; ``_:b._:c`` is the label ``b._`` then an error):
    # a dot followed by anything a label could hold is left to pyoxigraph's reader.
    if i + 1 < cursor.n and cursor.text[i] == c'.':
        after = cursor.text[i + 1]
        if _label_char(after) or after == c'.' or after >= 0x80:
            return False
    cursor.at = i
    out.append(<const char*>cursor.text + start, i - start)
    return True


cdef size_t _utf8_sequence(const unsigned char* s, size_t i, size_t n) noexcept nogil:
    """The length of the well-formed UTF-8 sequence of a non-ASCII character at ``i`` that
    ``str()`` of a literal writes unescaped, or 0 (malformed, or U+FFFE/U+FFFF)."""
    cdef unsigned char c = s[i]
    cdef size_t length, k
    cdef unsigned int code
    if 0xC2 <= c <= 0xDF:
        length, code = 2, c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        length, code = 3, c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        length, code = 4, c & 0x07
    else:
        return 0
    if i + length > n:
        return 0
    for k in range(1, length):
        if s[i + k] & 0xC0 != 0x80:
            return 0
        code = (code << 6) | (s[i + k] & 0x3F)
    if (length == 3 and (code < 0x800 or 0xD800 <= code <= 0xDFFF or code >= 0xFFFE)) or (
        length == 4 and (code < 0x10000 or code > 0x10FFFF)
    ):
        return 0
    return length


cdef bint _language(Cursor* cursor, string& out) noexcept:
    """``@`` and a language tag ``ll[l][-Ssss][-RR|-999]``, lower-cased."""
    cdef const unsigned char* s = cursor.text
    cdef size_t i = cursor.at + 1, start = i, n = cursor.n, part
    while i < n and _alpha(s[i]):
        i += 1
    if not 2 <= i - start <= 3:
        return False
    if i + 5 <= n and s[i] == c'-' and _alpha(s[i + 1]) and _alpha(s[i + 2]) and _alpha(s[i + 3]) and _alpha(s[i + 4]):
        i += 5
    if i < n and s[i] == c'-':
        part = i + 1
        if part + 2 <= n and _alpha(s[part]) and _alpha(s[part + 1]):
            i = part + 2
        elif part + 3 <= n and _digit(s[part]) and _digit(s[part + 1]) and _digit(s[part + 2]):
            i = part + 3
        else:
            return False
    if i < n and (_label_char(s[i]) or s[i] >= 0x80):  # a longer or another tag: not one of ours
        return False
    out.push_back(c'@')
    for part in range(start, i):
        out.push_back(<char>(s[part] + 32 if c'A' <= s[part] <= c'Z' else s[part]))
    cursor.at = i
    return True


cdef bint _literal(Cursor* cursor, string& out) noexcept:
    cdef const unsigned char* s = cursor.text
    cdef size_t i = cursor.at + 1, n = cursor.n, length, suffix
    cdef unsigned char c
    while i < n:
        c = s[i]
        if c == c'"':
            break
        if c == c'\\' or c < 0x20 or c == 0x7F:
            return False
        if c >= 0x80:
            length = _utf8_sequence(s, i, n)
            if length == 0:
                return False
            i += length
        else:
            i += 1
    if i == n:
        return False
    out.append(<const char*>s + cursor.at, i + 1 - cursor.at)
    cursor.at = i + 1
    if cursor.at < n and s[cursor.at] == c'@':
        return _language(cursor, out)
    if cursor.at + 1 < n and s[cursor.at] == c'^' and s[cursor.at + 1] == c'^':
        cursor.at += 2
        suffix = out.size()
        out.append(b"^^", 2)
        if not _iri(cursor, out):
            return False
        if _ends_with(out, suffix, _XSD_STRING):
            out.resize(suffix)  # pyoxigraph writes xsd:string literals without their datatype
        elif _ends_with(out, suffix, _RDF_LANG_STRING) or _ends_with(out, suffix, _RDF_DIR_LANG_STRING):
            return False
    return True


cdef bint _separate(Cursor* cursor, bint one_per_line) noexcept:
    """Skips the white space between the terms of a statement; False at the end of the text. One
    statement per line (N-Triples) allows only spaces and tabs there."""
    if not one_per_line:
        return _skip_space(cursor)
    while cursor.at < cursor.n and (cursor.text[cursor.at] == c' ' or cursor.text[cursor.at] == c'\t'):
        cursor.at += 1
    return cursor.at < cursor.n


cdef bint _end_of_line(Cursor* cursor) noexcept:
    """After a statement's dot, with one statement per line: only blanks and a comment until the
    end of the line."""
    while cursor.at < cursor.n and (cursor.text[cursor.at] == c' ' or cursor.text[cursor.at] == c'\t'):
        cursor.at += 1
    if cursor.at < cursor.n and cursor.text[cursor.at] == c'#':
        while cursor.at < cursor.n and cursor.text[cursor.at] != c'\n' and cursor.text[cursor.at] != c'\r':
            cursor.at += 1
    return cursor.at == cursor.n or cursor.text[cursor.at] == c'\n' or cursor.text[cursor.at] == c'\r'


cdef bint _node(Cursor* cursor, string& out, bint keep_blank_nodes, bint literal) noexcept:
    """A subject (an IRI or a blank node) or, with ``literal``, an object at the cursor."""
    cdef unsigned char c = cursor.text[cursor.at]
    if c == c'<':
        return _iri(cursor, out)
    if c == c'_' and keep_blank_nodes:
        return _blank_node(cursor, out)
    if c == c'"' and literal:
        return _literal(cursor, out)
    return False


def read_ntriples(text, bint keep_blank_nodes=True, bint one_per_line=False):
    """The triples of ``text`` (``str`` or UTF-8 ``bytes``) as ``TripleForms``, or None when the text
    is not made only of simple N-Triples statements (module docstring), read as Turtle, or as
    N-Triples (one statement per line) with ``one_per_line``. With ``keep_blank_nodes`` False
    (blank nodes renamed apart, as a document loaded on its own gets them), a blank node makes it
    None too."""
    cdef const char* data
    cdef Py_ssize_t size
    if isinstance(text, str):
        try:
            data = PyUnicode_AsUTF8AndSize(text, &size)
        except UnicodeEncodeError:
            return None
    elif isinstance(text, bytes):
        data = <bytes>text
        size = len(<bytes>text)
    else:
        raise TypeError(f"N-Triples text is str or bytes, not {type(text).__name__}")
    cdef Cursor cursor
    cursor.text = <const unsigned char*>data
    cursor.n = size
    cursor.at = 0
    cdef TripleForms forms = TripleForms()
    cdef string* out = &forms.data
    while _skip_space(&cursor):
        if not _node(&cursor, out[0], keep_blank_nodes, False):
            return None
        forms.ends.push_back(out.size())
        if not _separate(&cursor, one_per_line) or not _iri(&cursor, out[0]):
            return None
        forms.ends.push_back(out.size())
        if not _separate(&cursor, one_per_line) or not _node(&cursor, out[0], keep_blank_nodes, True):
            return None
        forms.ends.push_back(out.size())
        if not _separate(&cursor, one_per_line) or cursor.text[cursor.at] != c'.':
            return None
        cursor.at += 1
        if one_per_line and not _end_of_line(&cursor):
            return None
    return forms
