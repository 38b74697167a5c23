"""64-bit term ids: small values inlined with tag bits, every other term through a dictionary.

An id is a signed 64-bit integer (so it fits the ``int64`` keys and entries of the compiled
indexes) laid out as the seed papers do, **1 flag bit, 5 type bits, 58 value bits**::

    bit 63        62 … 58      57 … 0
    flag          type         value
    1 = inline    InlineType   the value itself (layout per type, below)
    0 = dictionary TermKind    a serial number, never reused

The flag is the sign bit: inline ids are negative, dictionary ids are not.

Terms are first put in the form pyoxigraph's Store gives them (``runtime.canonical``: ``"01"`` is
``"1"``, ``"5"^^xsd:int`` is ``"5"^^xsd:integer``, ``"19.0"^^xsd:decimal`` is ``"19"``…), so that
streamed terms are the static store's and the re-evaluation mode's: ``decode(encode(t))`` is the
Store's form of ``t``, and two terms the Store makes equal get one id. Inline ids of forms the Store
keeps cost one test of their type bits more; an inline id the Store would rewrite (a derived integer type, trailing
fraction zeros of a decimal, a dateTime at ``+00:00``) is rewritten on its bits
(``canonical_inline``), and only other forms of ``canonical.CANONICALISED`` datatypes take the slow
path through ``canonical``.

Inline literals (no dictionary entry, no reference count; ``incref``/``decref`` ignore them). Only
lexical forms the decoder rewrites *exactly* are inlined, so ``decode_inline(inline_id(t)) == t``;
any other form (``"01"``, ``"+1"``, ``"1"^^xsd:boolean``, ``"24:00:00"``, ``".5"``…) is not
inlined as written (the dictionary inlines its Store form when that has an inline id):

- ``xsd:integer`` and its derived types (``long`` … ``unsignedByte``, the type recorded in the type
  bits): canonical form (no sign ``+``, no leading zero, no ``-0``), value inside the type's range
  and inside 58-bit two's complement range; value stored biased by 2**57, so within one type the
  ids sort as the values do.
- ``xsd:boolean``: ``"true"`` and ``"false"`` only.
- ``xsd:decimal``: ``-?(0|[1-9][0-9]*)(\\.[0-9]{1,15})?``, not negative zero, unscaled value within
  54 bits; value = (unscaled + 2**53) << 4 | number of fraction digits. The fraction digits are kept
  as written, so ``"1.50"`` and ``"1.5"`` (different RDF terms) get different ids.
- ``xsd:dateTime``: ``YYYY-MM-DDThh:mm:ss[.f{1,3}][tz]`` with year 0001…9999, hours 00…23, seconds
  00…59, a fraction without trailing zeros (millisecond precision) and a timezone that is absent,
  ``Z``, or ``±hh:mm`` up to 14:00 (``-00:00`` is not canonical and is not inlined; ``+00:00`` is,
  kept apart from ``Z``). Value = (milliseconds + 2**46) << 11 | timezone code, where milliseconds
  count from 1970-01-01T00:00:00Z to the instant (for a value without timezone: to its wall-clock
  time read as UTC), and the code is 0 for no timezone, 1 for ``Z``, 2 + 840 + offset minutes
  otherwise. The 47-bit millisecond range ends at 4199-11-24T01:22:57.663Z; later instants go
  through the dictionary.

Dictionary ids carry the term kind (IRI, blank node, literal, triple) in the type bits and a serial
number. Each entry has a reference count: :meth:`TermDictionary.encode` returns an id *holding one
reference* (creating the entry at count 1, or adding one to an existing entry), :meth:`incref` adds
one for every further holder, :meth:`decref` drops one and releases the entry when it reaches 0.
Serial numbers are never reused (58 bits do not run out), so a stale id can never decode to another
term: it raises ``KeyError`` instead. :meth:`lookup` gives the id of a term without taking a
reference (``None`` if it has none), for probing with a query constant.

:meth:`encode_triples` encodes the triples of a stream event in one call: an ``array('q')`` of
three ids per triple, each holding one reference. Given a set of predicate ids, it leaves out the
triples whose predicate has none of them (the stream's predicate filter, ``engine.fanout``): their
terms are never entered, so nothing is released for them either.

``TermDictionary``, ``inline_id`` and ``decode_inline`` are compiled (``_dictionary.pyx``, keyed
by the N-Triples form of each term in C++-side tables with no Python object per entry, and
``_encoding.pyx``: 3–10× faster to encode, 1.5–5× to decode) unless ``CQELS_PURE_PYTHON=1``
selects ``TermDictionaryPython``, ``inline_id_python`` and ``decode_inline_python``, the reference
versions below; ``COMPILED`` says which. Both give the same ids, reference counts and terms
(tests/runtime/test_encoding.py checks it). The type bits are named by ``term_kinds``.

One dictionary per Engine, shared by its static caches and streams. It is not thread-safe: the
engine serialises pushes, advances and registrations.

>>> d = TermDictionary()
>>> i = d.encode(ox.Literal("42", datatype=ox.NamedNode(XSD + "integer")))
>>> is_inline(i), len(d)
(True, 0)
>>> j = d.encode(ox.NamedNode("http://example.org/a"))
>>> is_inline(j), len(d), d.decode(j)
(False, 1, <NamedNode value=http://example.org/a>)
>>> d.decref(j); len(d)
0
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Container, Iterable, Sequence
from datetime import date

import pyoxigraph as ox

from cqels_endpoint.runtime.canonical import CANONICALISED, canonical_literal, canonical_triple
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.term_kinds import TYPE_MASK, TYPE_SHIFT, InlineType, TermKind, kind_of

XSD = "http://www.w3.org/2001/XMLSchema#"

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple

VALUE_MASK = (1 << TYPE_SHIFT) - 1
_INLINE_BASE = -(1 << 63)  # the flag bit alone, as a signed int64

_INT_BIAS = 1 << 57
_INT_MIN, _INT_MAX = -(1 << 57), (1 << 57) - 1
_DECIMAL_BIAS = 1 << 53
_DECIMAL_MAX_SCALE = 15
_MS_BIAS = 1 << 46
_TZ_BITS = 11
_TZ_NONE, _TZ_UTC, _TZ_OFFSET = 0, 1, 2
_MAX_OFFSET_MINUTES = 14 * 60
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MS_PER_DAY = 86_400_000


# xsd integer type → (type bits, smallest value, largest value); None = unbounded on that side.
_INTEGER_TYPES: dict[str, tuple[InlineType, int | None, int | None]] = {
    XSD + "integer": (InlineType.INTEGER, None, None),
    XSD + "long": (InlineType.LONG, -(1 << 63), (1 << 63) - 1),
    XSD + "int": (InlineType.INT, -(1 << 31), (1 << 31) - 1),
    XSD + "short": (InlineType.SHORT, -(1 << 15), (1 << 15) - 1),
    XSD + "byte": (InlineType.BYTE, -(1 << 7), (1 << 7) - 1),
    XSD + "nonNegativeInteger": (InlineType.NON_NEGATIVE_INTEGER, 0, None),
    XSD + "positiveInteger": (InlineType.POSITIVE_INTEGER, 1, None),
    XSD + "nonPositiveInteger": (InlineType.NON_POSITIVE_INTEGER, None, 0),
    XSD + "negativeInteger": (InlineType.NEGATIVE_INTEGER, None, -1),
    XSD + "unsignedLong": (InlineType.UNSIGNED_LONG, 0, (1 << 64) - 1),
    XSD + "unsignedInt": (InlineType.UNSIGNED_INT, 0, (1 << 32) - 1),
    XSD + "unsignedShort": (InlineType.UNSIGNED_SHORT, 0, (1 << 16) - 1),
    XSD + "unsignedByte": (InlineType.UNSIGNED_BYTE, 0, (1 << 8) - 1),
}
_XSD_DECIMAL = XSD + "decimal"
_XSD_BOOLEAN = XSD + "boolean"
_XSD_DATETIME = XSD + "dateTime"

# Datatype of each inline type, as the NamedNode decode puts in the literal (built once).
_DATATYPES: dict[int, ox.NamedNode] = {
    code: ox.NamedNode(iri) for iri, (code, _, _) in _INTEGER_TYPES.items()
} | {
    InlineType.DECIMAL: ox.NamedNode(_XSD_DECIMAL),
    InlineType.BOOLEAN: ox.NamedNode(_XSD_BOOLEAN),
    InlineType.DATETIME: ox.NamedNode(_XSD_DATETIME),
}

# [0-9] rather than \d: \d also matches non-ASCII digits, which int() would silently accept.
_DECIMAL_FORM = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]{1,15}))?")
_DATETIME_FORM = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{0,2}[1-9]))?(Z|[+-][0-9]{2}:[0-9]{2})?"
)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_inline(term_id: int) -> bool:
    """True for ids that hold their value (no dictionary entry)."""
    return term_id < 0


def _inline(code: int, value: int) -> int:
    return _INLINE_BASE | (code << TYPE_SHIFT) | value


def _inline_integer(lexical: str, code: int, low: int | None, high: int | None) -> int | None:
    # str(int(s)) == s rejects "+1", "01", "-0", " 1", "1_0" in one test; the length guard keeps
    # int() from parsing huge strings that could not fit anyway.
    if len(lexical) > 19:
        return None
    try:
        value = int(lexical)
    except ValueError:
        return None
    if str(value) != lexical or not _INT_MIN <= value <= _INT_MAX:
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return _inline(code, value + _INT_BIAS)


def _inline_decimal(lexical: str) -> int | None:
    match = _DECIMAL_FORM.fullmatch(lexical)
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    fraction = fraction or ""
    if len(whole) + len(fraction) > 17:  # cannot fit 54 bits; also bounds int() below
        return None
    unscaled = int(whole + fraction)
    if sign:
        if unscaled == 0:  # "-0.0" would come back as "0.0"
            return None
        unscaled = -unscaled
    if not -_DECIMAL_BIAS <= unscaled < _DECIMAL_BIAS:
        return None
    scale = len(fraction) if match.group(3) is not None else 0
    return _inline(InlineType.DECIMAL, ((unscaled + _DECIMAL_BIAS) << 4) | scale)


def _days_in_month(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _DAYS_IN_MONTH[month - 1]


def _inline_datetime(lexical: str) -> int | None:
    match = _DATETIME_FORM.fullmatch(lexical)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    if not (year >= 1 and 1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    millis = int(fraction.ljust(3, "0")) if fraction else 0
    local = (
        (date(year, month, day).toordinal() - _EPOCH_ORDINAL) * _MS_PER_DAY
        + ((hour * 60 + minute) * 60 + second) * 1000
        + millis
    )
    if zone is None:
        tz_code, instant = _TZ_NONE, local
    elif zone == "Z":
        tz_code, instant = _TZ_UTC, local
    else:
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        offset = hours * 60 + minutes
        if minutes > 59 or offset > _MAX_OFFSET_MINUTES or zone == "-00:00":
            return None
        if zone[0] == "-":
            offset = -offset
        tz_code, instant = _TZ_OFFSET + _MAX_OFFSET_MINUTES + offset, local - offset * 60_000
    if not -_MS_BIAS <= instant < _MS_BIAS:
        return None
    return _inline(InlineType.DATETIME, ((instant + _MS_BIAS) << _TZ_BITS) | tz_code)


def inline_id_python(literal: ox.Literal) -> int | None:
    """The inline id of a literal, or None when its datatype or lexical form is not inlined.

    The reference version of ``inline_id`` (``_encoding.pyx`` compiles the same rules).
    """
    datatype = literal.datatype.value
    integer_type = _INTEGER_TYPES.get(datatype)
    if integer_type is not None:
        return _inline_integer(literal.value, *integer_type)
    if datatype == _XSD_BOOLEAN:
        lexical = literal.value
        if lexical == "true":
            return _inline(InlineType.BOOLEAN, 1)
        if lexical == "false":
            return _inline(InlineType.BOOLEAN, 0)
        return None
    if datatype == _XSD_DECIMAL:
        return _inline_decimal(literal.value)
    if datatype == _XSD_DATETIME:
        return _inline_datetime(literal.value)
    return None


def _format_datetime(field: int) -> str:
    tz_code = field & ((1 << _TZ_BITS) - 1)
    instant = (field >> _TZ_BITS) - _MS_BIAS
    if tz_code >= _TZ_OFFSET:
        offset = tz_code - _TZ_OFFSET - _MAX_OFFSET_MINUTES
        local = instant + offset * 60_000
        sign = "-" if offset < 0 else "+"
        zone = f"{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    else:
        local = instant
        zone = "Z" if tz_code == _TZ_UTC else ""
    days, in_day = divmod(local, _MS_PER_DAY)
    day = date.fromordinal(days + _EPOCH_ORDINAL)
    seconds, millis = divmod(in_day, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    fraction = f".{millis:03d}".rstrip("0") if millis else ""
    return (
        f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
        f"{fraction}{zone}"
    )


def _format_decimal(field: int) -> str:
    scale = field & 0xF
    unscaled = (field >> 4) - _DECIMAL_BIAS
    if scale == 0:
        return str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    sign = "-" if unscaled < 0 else ""
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def inline_datatype(code: int) -> ox.NamedNode | None:
    """The datatype of the inline type ``code`` (an ``InlineType``); None if no inline type uses it."""
    return _DATATYPES.get(code)


def decode_inline_python(term_id: int) -> ox.Literal:
    """The literal an inline id stands for; ``ValueError`` if the id is not inline.

    The reference version of ``decode_inline`` (``_encoding.pyx`` compiles the same rules).
    """
    if term_id >= 0:
        msg = f"term id {term_id} is a dictionary id, not an inline one; decode it with its TermDictionary"
        raise ValueError(msg)
    code = (term_id >> TYPE_SHIFT) & TYPE_MASK
    field = term_id & VALUE_MASK
    datatype = inline_datatype(code)
    if datatype is None:
        msg = f"term id {term_id} has inline type bits {code}, which no inline type uses"
        raise ValueError(msg)
    if code == InlineType.BOOLEAN:
        lexical = "true" if field else "false"
    elif code == InlineType.DATETIME:
        lexical = _format_datetime(field)
    elif code == InlineType.DECIMAL:
        lexical = _format_decimal(field)
    else:
        lexical = str(field - _INT_BIAS)
    return ox.Literal(lexical, datatype=datatype)


_TYPE_BITS = TYPE_MASK << TYPE_SHIFT
_TZ_MASK = (1 << _TZ_BITS) - 1
_TZ_PLUS_ZERO = _TZ_OFFSET + _MAX_OFFSET_MINUTES  # the timezone code of "+00:00"


def canonical_inline(term_id: int) -> int:
    """The inline id of the Store's form of the literal of inline id ``term_id``: a value of a type
    derived from xsd:integer becomes xsd:integer, a decimal loses its trailing fraction zeros, a
    dateTime at ``+00:00`` moves to ``Z`` (``_dictionary.pyx`` does the same on the bits)."""
    code = (term_id >> TYPE_SHIFT) & TYPE_MASK
    if code == InlineType.INTEGER or code == InlineType.BOOLEAN:
        return term_id
    if code == InlineType.DECIMAL:
        field = term_id & VALUE_MASK
        scale, unscaled = field & 0xF, (field >> 4) - _DECIMAL_BIAS
        if not scale or unscaled % 10:
            return term_id
        while scale and not unscaled % 10:
            unscaled //= 10
            scale -= 1
        return _inline(InlineType.DECIMAL, ((unscaled + _DECIMAL_BIAS) << 4) | scale)
    if code == InlineType.DATETIME:
        if term_id & _TZ_MASK == _TZ_PLUS_ZERO:
            return (term_id & ~_TZ_MASK) | _TZ_UTC
        return term_id
    return (term_id & ~_TYPE_BITS) | (InlineType.INTEGER << TYPE_SHIFT)


def _canonical(term: Term, kind: TermKind) -> Term | int:
    """The Store's form of ``term``: its inline id when it has one, else the term."""
    if kind is TermKind.LITERAL:
        inline = inline_id(term)
        if inline is not None:
            return canonical_inline(inline)
        if term.datatype.value in CANONICALISED:
            term = canonical_literal(term)
            inline = inline_id(term)
            if inline is not None:
                return inline
    elif kind is TermKind.TRIPLE:
        return canonical_triple(term)
    return term


_KINDS: dict[type, TermKind] = {
    ox.NamedNode: TermKind.IRI,
    ox.BlankNode: TermKind.BLANK_NODE,
    ox.Literal: TermKind.LITERAL,
    ox.Triple: TermKind.TRIPLE,
}


class TermDictionaryPython:
    """Term ↔ id for one engine, with reference-counted entries (see the module docstring).

    The reference version of ``TermDictionary`` (``_dictionary.pyx`` compiles the same contract):
    dicts keyed by the pyoxigraph terms themselves.
    """

    __slots__ = ("_ids", "_next_serial", "_refs", "_terms")

    def __init__(self) -> None:
        self._ids: dict[Term, int] = {}
        self._terms: dict[int, Term] = {}
        self._refs: dict[int, int] = {}
        self._next_serial = 0

    def __len__(self) -> int:
        """Number of live dictionary entries (inline terms have none)."""
        return len(self._terms)

    def __contains__(self, term: Term) -> bool:
        """True if the term has an id right now (inline terms always have one)."""
        return self.lookup(term) is not None

    def encode(self, term: Term) -> int:
        """The id of ``term``, taking one reference to its entry (creating it if needed)."""
        kind = _KINDS.get(type(term))
        if kind is None:
            msg = (
                f"cannot encode {term!r}: term ids are for pyoxigraph NamedNode, BlankNode, Literal "
                "and Triple (convert query constants with cqels_endpoint.oxigraph.terms.constant_term)"
            )
            raise TypeError(msg)
        term = _canonical(term, kind)
        if type(term) is int:
            return term
        term_id = self._ids.get(term)
        if term_id is None:
            term_id = (kind << TYPE_SHIFT) | self._next_serial
            self._next_serial += 1
            self._ids[term] = term_id
            self._terms[term_id] = term
            self._refs[term_id] = 1
        else:
            self._refs[term_id] += 1
        return term_id

    def encode_many(self, terms: Iterable[Term]) -> list[int]:
        """``[encode(t) for t in terms]``: one reference taken per term."""
        encode = self.encode
        return [encode(term) for term in terms]

    def encode_triples(self, triples: Sequence[ox.Triple | ox.Quad], predicates: Container[int] | None = None) -> array:
        """The ids of a sequence of triples (or quads, whose graph is ignored), three per triple in
        order, each holding one reference; nothing is taken if one is not a triple. With
        ``predicates`` (a set of ids), a triple whose predicate has none of them is left out and
        takes nothing: its terms get no entry."""
        for triple in triples:
            if type(triple) is not ox.Triple and type(triple) is not ox.Quad:
                msg = f"not a triple: {triple!r}"
                raise TypeError(msg)
        if predicates is not None:
            lookup = self.lookup
            triples = [triple for triple in triples if lookup(triple.predicate) in predicates]
        encode = self.encode
        return array("q", [encode(term) for triple in triples for term in (triple.subject, triple.predicate, triple.object)])

    def lookup(self, term: Term) -> int | None:
        """The id of ``term`` without taking a reference; None if it is in no entry (and not inline)."""
        kind = _KINDS.get(type(term))
        if kind is None:
            return None  # not a term: it has no id
        term = _canonical(term, kind)
        if type(term) is int:
            return term
        return self._ids.get(term)

    def decode(self, term_id: int) -> Term:
        """The term of an id; ``KeyError`` for a dictionary id whose entry was released."""
        if term_id < 0:
            return decode_inline(term_id)
        try:
            return self._terms[term_id]
        except KeyError:
            msg = f"term id {term_id} has no dictionary entry (never issued, or released at refcount 0)"
            raise KeyError(msg) from None

    def decode_row(self, ids: Iterable[int]) -> tuple[Term, ...]:
        """The terms of a row of ids, in order."""
        decode = self.decode
        return tuple(decode(term_id) for term_id in ids)

    def incref(self, term_id: int) -> None:
        """One more holder of ``term_id`` (no-op for inline ids)."""
        if term_id >= 0:
            self._refs[self._live(term_id)] += 1

    def incref_many(self, ids: Iterable[int]) -> None:
        """``incref`` each id (a row entering a window, say)."""
        incref = self.incref
        for term_id in ids:
            incref(term_id)

    def decref(self, term_id: int) -> None:
        """One holder fewer; the entry is released when none is left (no-op for inline ids)."""
        if term_id < 0:
            return
        count = self._refs[self._live(term_id)] - 1
        if count:
            self._refs[term_id] = count
        else:
            del self._refs[term_id]
            del self._ids[self._terms.pop(term_id)]

    def decref_many(self, ids: Iterable[int]) -> None:
        """``decref`` each id (a row leaving a window, say)."""
        decref = self.decref
        for term_id in ids:
            decref(term_id)

    def refcount(self, term_id: int) -> int:
        """References held on a dictionary id (0 once released); inline ids report 0."""
        return self._refs.get(term_id, 0) if term_id >= 0 else 0

    def kind(self, term_id: int) -> TermKind | InlineType:
        """What an id stands for, read from its type bits alone (no lookup)."""
        return kind_of(term_id)

    def _live(self, term_id: int) -> int:
        if term_id not in self._refs:
            msg = f"term id {term_id} has no dictionary entry (never issued, or released at refcount 0)"
            raise KeyError(msg)
        return term_id


COMPILED = not use_pure_python()
if COMPILED:
    with compiled_imports("term codec"):
        from cqels_endpoint.runtime._dictionary import TermDictionary
        from cqels_endpoint.runtime._encoding import decode_inline, inline_id
else:
    inline_id, decode_inline = inline_id_python, decode_inline_python
    TermDictionary = TermDictionaryPython
