"""Literals in the form pyoxigraph's Store gives them, for the term dictionaries (``encoding``).

The Store keeps many XSD literals as values and writes them back in a canonical form: ``"01"`` and
``"+1"``\\ ``^^xsd:integer`` come back as ``"1"``, ``"19.0"^^xsd:decimal`` as ``"19"``,
``"1"^^xsd:boolean`` as ``"true"``, ``"1.0E0"^^xsd:double`` as ``"1"``,
``"…T00:00:00+00:00"^^xsd:dateTime`` as ``"…T00:00:00Z"``, ``"PT60S"^^xsd:duration`` as
``"PT1M"``; a value of a type derived from ``xsd:integer`` (``xsd:int``, ``xsd:byte``…) that fits
64 bits comes back typed ``xsd:integer`` whatever its type's range, and ``xsd:dateTimeStamp`` as
``xsd:dateTime``. A lexical form it cannot read as a value (``"abc"^^xsd:int``,
``"2020-02-30"^^xsd:date``, an ``xsd:integer`` beyond 64 bits) is kept as written. Static data,
one-shot queries and the re-evaluation mode all read terms back from a Store, so the incremental
mode must key its terms by the same forms, or a stream ``"01"`` would not join a static ``"1"``.

``CANONICALISED`` lists the datatypes whose literals the Store may rewrite (found by experiment:
tests/runtime/test_canonical_literals.py checks that the Store keeps every other XSD datatype as
written). ``canonical_literal`` and ``canonical_triple`` give the Store's form of a term,
``canonical_form`` the same on N-Triples forms (for the compiled dictionary). Plain positional
``xsd:double``/``xsd:float`` forms short enough to be exact (``"3.50"``, ``"-73.962440"``) are
rewritten as text (``positional_double``); anything else goes once through a private Store, and the
answers are remembered (streams repeat their values).
"""

from __future__ import annotations

import re
import threading

import pyoxigraph as ox

XSD = "http://www.w3.org/2001/XMLSchema#"

CANONICALISED = frozenset(
    XSD + name
    for name in (
        "boolean", "decimal", "integer", "long", "int", "short", "byte", "nonNegativeInteger",
        "positiveInteger", "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt",
        "unsignedShort", "unsignedByte", "double", "float", "dateTime", "dateTimeStamp", "date", "time",
        "duration", "dayTimeDuration", "yearMonthDuration", "gYear", "gYearMonth", "gMonth", "gMonthDay",
        "gDay",
    )
)
_XSD_DOUBLE = XSD + "double"
_XSD_FLOAT = XSD + "float"

# A plain positional number; at most POSITIONAL_LENGTH characters keeps its magnitude within
# [1e-28, 1e30), where both binary formats are normal and exact to their DIG digits.
_POSITIONAL = re.compile(r"([+-]?)([0-9]+)(?:\.([0-9]+))?")
POSITIONAL_LENGTH = 30
# DBL_DIG and FLT_DIG: a decimal of at most that many significant digits is the shortest form that
# reads back to its binary value, so the Store (which writes the shortest form, positionally) writes
# it unchanged, up to leading and trailing zeros and the sign "+".
DOUBLE_DIGITS, FLOAT_DIGITS = 15, 6

_MEMO_SIZE = 1 << 16
_SUBJECT = ox.NamedNode("urn:cqels:canonical")
_GRAPH = ox.DefaultGraph()
_STORE = ox.Store()
_LOCK = threading.Lock()  # several engines (threads) may canonicalise at once through _STORE
# Canonicalisations through one _STORE before it is replaced by a fresh one: pyoxigraph's in-memory
# store keeps what a removed quad took (about 350 bytes a new literal), so one store for the
# process grew with every distinct literal canonicalised (issue 31). Empty between two calls, a
# fresh store answers the same; this bounds the dead weight to about 1.5 MB.
_STORE_USES = 4096
_uses = 0
_literals: dict[ox.Literal, ox.Literal] = {}
_triples: dict[ox.Triple, ox.Triple] = {}
_forms: dict[str, str] = {}


def positional_double(lexical: str, max_digits: int) -> str | None:
    """The Store's form of a plain positional ``xsd:double`` (``max_digits`` 15) or ``xsd:float``
    (6) lexical form, or None when the form is not one that text alone can rewrite."""
    match = _POSITIONAL.fullmatch(lexical)
    if match is None or len(lexical) > POSITIONAL_LENGTH:
        return None
    sign, whole, fraction = match.groups()
    whole = whole.lstrip("0") or "0"
    fraction = (fraction or "").rstrip("0")
    if len((whole + fraction).strip("0")) > max_digits:
        return None
    return ("-" if sign == "-" else "") + whole + ("." + fraction if fraction else "")


def _stored(term: ox.Literal | ox.Triple) -> ox.Literal | ox.Triple:
    global _STORE, _uses
    quad = ox.Quad(_SUBJECT, _SUBJECT, term, _GRAPH)
    with _LOCK:
        _STORE.add(quad)
        stored = next(_STORE.quads_for_pattern(_SUBJECT, _SUBJECT, None, _GRAPH)).object
        _STORE.remove(quad)
        _uses += 1
        if _uses >= _STORE_USES:
            _STORE, _uses = ox.Store(), 0
    return stored


def _remember(memo: dict, key: object, value: object) -> None:
    if len(memo) >= _MEMO_SIZE:  # bounded: a stream of distinct values must not grow it forever
        memo.clear()
    memo[key] = value


def canonical_literal(literal: ox.Literal) -> ox.Literal:
    """The literal as the Store gives it back (itself when its datatype is not ``CANONICALISED``)."""
    datatype = literal.datatype.value
    if datatype not in CANONICALISED:
        return literal
    if datatype == _XSD_DOUBLE or datatype == _XSD_FLOAT:
        lexical = positional_double(literal.value, DOUBLE_DIGITS if datatype == _XSD_DOUBLE else FLOAT_DIGITS)
        if lexical is not None:
            return literal if lexical == literal.value else ox.Literal(lexical, datatype=literal.datatype)
    return _memoised(_literals, literal)


def _has_canonicalised(term: object) -> bool:
    if type(term) is ox.Literal:
        return term.datatype.value in CANONICALISED
    if type(term) is ox.Triple:
        return _has_canonicalised(term.subject) or _has_canonicalised(term.object)
    return False


def canonical_triple(triple: ox.Triple) -> ox.Triple:
    """The RDF-star quoted triple as the Store gives it back (its literals, at any depth, in their
    Store forms)."""
    if not _has_canonicalised(triple):
        return triple
    return _memoised(_triples, triple)


def _memoised(memo: dict, term):
    """The Store form of ``term``, from ``memo`` or a round trip through the Store."""
    stored = memo.get(term)
    if stored is None:
        stored = _stored(term)
        _remember(memo, term, stored)
    return stored


def canonical_form(form: str) -> str:
    """``canonical_literal``/``canonical_triple`` on N-Triples forms as the compiled dictionary keys
    terms (``"v"^^<dt>``, ``<<( s p o )>>``): the form of the term as the Store gives it back."""
    stored = _forms.get(form)
    if stored is None:
        term = next(iter(ox.parse(f"<urn:cqels:s> <urn:cqels:p> {form} .", format=ox.RdfFormat.N_TRIPLES))).object
        if type(term) is ox.Literal:
            stored = str(canonical_literal(term))
        else:
            stored = f"<<( {canonical_triple(term)} )>>"
        _remember(_forms, form, stored)
    return stored
