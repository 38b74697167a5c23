"""Term ids: every term round-trips to the form pyoxigraph's Store gives it, canonical values are
inlined, entries are reference-counted (tests/runtime/test_canonical_literals.py tests the Store
forms in depth)."""

from datetime import datetime, timezone

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.runtime import _dictionary, _encoding, encoding
from cqels_endpoint.runtime.compiled import use_pure_python
from cqels_endpoint.runtime.encoding import (
    XSD,
    InlineType,
    TermDictionary,
    TermDictionaryPython,
    TermKind,
    decode_inline,
    decode_inline_python,
    inline_id,
    inline_id_python,
    is_inline,
)
from cqels_endpoint.terms import IRI

# Every dictionary test runs on the compiled dictionary and on its twin.
dictionaries = pytest.mark.parametrize(
    "new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"]
)


def typed(lexical: str, datatype: str) -> ox.Literal:
    return ox.Literal(lexical, datatype=ox.NamedNode(XSD + datatype))


_ORACLE = ox.Store()
_SUBJECT = ox.NamedNode("urn:test:s")


def stored(term):
    """The term as a pyoxigraph Store gives it back: what the dictionaries must decode to."""
    _ORACLE.clear()
    _ORACLE.add(ox.Quad(_SUBJECT, _SUBJECT, term))
    return next(iter(_ORACLE)).object


def canonical_datetime(moment: datetime) -> str:
    """XSD's canonical form of a naive datetime, at millisecond precision, without timezone."""
    millis = moment.microsecond // 1000
    fraction = f".{millis:03d}".rstrip("0") if millis else ""
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{fraction}"
    )


INTEGER_TYPES = [
    "integer", "long", "int", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte",
]  # fmt: skip

# --- strategies --------------------------------------------------------------------------------

iris = st.text(
    st.sampled_from("abcxyzABC0129-._~/é中"), max_size=12
).map(lambda path: ox.NamedNode("http://example.org/" + path))
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
simple_literals = texts.map(ox.Literal)
language_literals = st.builds(
    lambda text, tag: ox.Literal(text, language=tag),
    texts,
    st.sampled_from(["en", "EN-GB", "en-us", "fr", "de-CH-1901", "zh-Hant-TW", "sgn-BE-FR"]),
)
blank_nodes = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,10}", fullmatch=True).map(ox.BlankNode)

# Lexical forms of every shape, canonical or not, valid or not: the encoder must inline the right
# ones and keep every one exact.
integer_forms = st.one_of(
    st.integers(-(1 << 60), 1 << 60).map(str),
    st.from_regex(r"[+-]?[0-9]{1,20}", fullmatch=True),
    st.sampled_from(["-0", "+0", "00", " 1", "1_0", "١", ""]),
)
integer_literals = st.builds(typed, integer_forms, st.sampled_from(INTEGER_TYPES))
boolean_literals = st.sampled_from(["true", "false", "1", "0", "TRUE", " true", ""]).map(
    lambda lexical: typed(lexical, "boolean")
)
decimal_literals = st.one_of(
    st.from_regex(r"[+-]?[0-9]{0,19}(\.[0-9]{0,17})?", fullmatch=True),
    st.sampled_from(["-0.0", "-0", "0.0", "1.", ".5", "1.50", "1e3"]),
).map(lambda lexical: typed(lexical, "decimal"))


@st.composite
def datetime_forms(draw) -> str:
    year = draw(st.sampled_from([1, 1969, 1970, 2000, 2024, 4199, 4200, 9999]) | st.integers(1, 9999))
    month = draw(st.integers(0, 13))
    day = draw(st.integers(0, 31))
    hour = draw(st.sampled_from([0, 23, 24]) | st.integers(0, 23))
    minute, second = draw(st.integers(0, 60)), draw(st.integers(0, 60))
    fraction = draw(st.sampled_from(["", ".5", ".50", ".05", ".123", ".1234", ".999", ".0", "."]))
    zone = draw(
        st.sampled_from(
            ["", "Z", "+00:00", "-00:00", "+14:00", "-14:00", "+14:01", "+05:30", "-09:45", "+1:00"]
        )
    )
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{zone}"


datetime_literals = datetime_forms().map(lambda lexical: typed(lexical, "dateTime"))
other_typed_literals = st.builds(
    typed, texts, st.sampled_from(["double", "float", "string", "date", "time", "gYear"])
)
literals = st.one_of(
    simple_literals, language_literals, integer_literals, boolean_literals, decimal_literals,
    datetime_literals, other_typed_literals,
)  # fmt: skip
directional_literals = st.builds(
    lambda text, tag, direction: ox.Literal(text, language=tag, direction=direction),
    texts,
    st.sampled_from(["en", "ar-EG"]),
    st.sampled_from([ox.BaseDirection.LTR, ox.BaseDirection.RTL]),
)
# Every character str() escapes in a literal, and the ones next to them.
escaped_literals = st.text(
    st.sampled_from(["\x00", "\x01", "\b", "\t", "\n", "\x0b", "\f", "\r", "\x1f", " ", '"', "'", "\\", "\x7f", "\x80",
                     "\ufffd", "\ufffe", "\uffff", "\U0001f600", "u", "U", "0"]),
    max_size=8,
).map(ox.Literal)
terms = st.one_of(iris, blank_nodes, literals, directional_literals, escaped_literals)
triples = st.builds(ox.Triple, iris | blank_nodes, iris, terms)
# RDF 1.2 triple terms, nested once: a triple in the object position of a triple.
triple_terms = st.builds(ox.Triple, iris | blank_nodes, iris, triples)

# --- round trip --------------------------------------------------------------------------------


@dictionaries
@settings(max_examples=500)
@given(st.lists(terms | triples | triple_terms, max_size=30))
def test_every_term_round_trips_to_its_store_form_and_ids_are_injective(new_dictionary, term_list):
    dictionary = new_dictionary()
    ids = dictionary.encode_many(term_list)
    forms = [stored(term) for term in term_list]
    for form, term_id in zip(forms, ids):
        decoded = dictionary.decode(term_id)
        assert decoded == form
        assert type(decoded) is type(form)
        if isinstance(form, ox.Literal):
            assert decoded.value == form.value  # the exact lexical form
            assert decoded.datatype == form.datatype and decoded.language == form.language
        assert -(1 << 63) <= term_id < (1 << 63)
    id_of = {}
    for form, term_id in zip(forms, ids):
        assert id_of.setdefault(form, term_id) == term_id  # same Store term, same id
    assert len(set(ids)) == len(id_of)  # different Store terms, different ids
    assert dictionary.decode_row(ids) == tuple(forms)
    assert len(dictionary) == len({f for f, i in zip(forms, ids) if not is_inline(i)})
    dictionary.decref_many(ids)  # one reference per encode
    assert len(dictionary) == 0


# --- inlining ----------------------------------------------------------------------------------

INTEGER_BOUNDS = {
    "integer": (None, None), "long": (-(1 << 63), (1 << 63) - 1), "int": (-(1 << 31), (1 << 31) - 1),
    "short": (-(1 << 15), (1 << 15) - 1), "byte": (-128, 127), "nonNegativeInteger": (0, None),
    "positiveInteger": (1, None), "nonPositiveInteger": (None, 0), "negativeInteger": (None, -1),
    "unsignedLong": (0, None), "unsignedInt": (0, (1 << 32) - 1), "unsignedShort": (0, 65535),
    "unsignedByte": (0, 255),
}  # fmt: skip


@st.composite
def canonical_integers(draw) -> ox.Literal:
    datatype = draw(st.sampled_from(INTEGER_TYPES))
    low, high = INTEGER_BOUNDS[datatype]
    low = -(1 << 57) if low is None else max(low, -(1 << 57))
    high = (1 << 57) - 1 if high is None else min(high, (1 << 57) - 1)
    return typed(str(draw(st.integers(low, high))), datatype)


@st.composite
def canonical_datetimes(draw) -> ox.Literal:
    moment = draw(st.datetimes(datetime(1, 1, 2), datetime(4199, 11, 1)))
    offset = draw(st.none() | st.just("Z") | st.integers(-840, 840))
    if offset is None or offset == "Z":
        zone = offset or ""
    elif offset == 0:
        zone = "+00:00"
    else:
        zone = f"{'-' if offset < 0 else '+'}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    return typed(canonical_datetime(moment) + zone, "dateTime")


@st.composite
def canonical_decimals(draw) -> ox.Literal:
    unscaled = draw(st.integers(-(1 << 53), (1 << 53) - 1))
    scale = draw(st.integers(0, 15))
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    if scale == 0:
        return typed(str(unscaled), "decimal")
    if unscaled == 0:
        return typed("0." + "0" * scale, "decimal")
    return typed(("-" if unscaled < 0 else "") + digits[:-scale] + "." + digits[-scale:], "decimal")


canonical_literals = st.one_of(
    canonical_integers(),
    canonical_datetimes(),
    canonical_decimals(),
    st.sampled_from([typed("true", "boolean"), typed("false", "boolean")]),
)


@dictionaries
@settings(max_examples=500)
@given(canonical_literals)
def test_canonical_values_are_inlined_without_touching_the_dictionary(new_dictionary, literal):
    dictionary = new_dictionary()
    term_id = dictionary.encode(literal)
    assert is_inline(term_id)
    assert len(dictionary) == 0 and dictionary.refcount(term_id) == 0
    assert dictionary.decode(term_id) == stored(literal)
    assert decode_inline(term_id).value == stored(literal).value
    assert dictionary.lookup(literal) == term_id
    dictionary.incref(term_id)
    dictionary.decref(term_id)  # no-ops on inline ids
    assert len(dictionary) == 0


@pytest.mark.parametrize(
    "literal",
    [
        typed("01", "integer"), typed("+1", "integer"), typed("-0", "integer"), typed(" 1", "integer"),
        typed(str(1 << 57), "integer"), typed("300", "byte"), typed("-1", "nonNegativeInteger"),
        typed("0", "positiveInteger"), typed("1", "boolean"), typed("0", "boolean"),
        typed("TRUE", "boolean"), typed(".5", "decimal"), typed("1.", "decimal"),
        typed("+1.5", "decimal"), typed("-0.0", "decimal"), typed("0.1234567890123456", "decimal"),
        typed("2020-01-01T00:00:00.500Z", "dateTime"), typed("2020-01-01T24:00:00", "dateTime"),
        typed("2020-01-01T00:00:00-00:00", "dateTime"), typed("2020-02-30T00:00:00", "dateTime"),
        typed("2020-01-01T00:00:60Z", "dateTime"), typed("2020-01-01T00:00:00+14:30", "dateTime"),
        typed("0000-01-01T00:00:00Z", "dateTime"), typed("9999-01-01T00:00:00Z", "dateTime"),
        typed("2020-01-01T00:00:00.1234Z", "dateTime"), typed("42", "double"), ox.Literal("42"),
    ],
    ids=lambda literal: f"{literal.value}^^{literal.datatype.value.rsplit('#', 1)[-1]}",
)
@dictionaries
def test_non_canonical_forms_are_not_inlined_as_written(new_dictionary, literal):
    # The codec refuses them; the dictionary keys them by their Store form, inlined when the codec
    # takes that form ("01" is "1"), an entry otherwise ("abc"^^xsd:int, "42"^^xsd:double).
    assert inline_id(literal) is None
    dictionary = new_dictionary()
    term_id = dictionary.encode(literal)
    form = stored(literal)
    assert is_inline(term_id) is (inline_id(form) is not None)
    assert len(dictionary) == (0 if is_inline(term_id) else 1)
    if not is_inline(term_id):
        assert dictionary.kind(term_id) is TermKind.LITERAL
    assert dictionary.decode(term_id) == form


@dictionaries
def test_type_bits_say_what_an_id_is(new_dictionary):
    dictionary = new_dictionary()
    assert dictionary.kind(dictionary.encode(typed("5", "byte"))) is InlineType.INTEGER  # as the Store types it
    assert dictionary.kind(dictionary.encode(typed("5", "integer"))) is InlineType.INTEGER
    assert dictionary.kind(dictionary.encode(typed("true", "boolean"))) is InlineType.BOOLEAN
    assert dictionary.kind(dictionary.encode(typed("1.5", "decimal"))) is InlineType.DECIMAL
    moment = typed("2020-01-01T00:00:00Z", "dateTime")
    assert dictionary.kind(dictionary.encode(moment)) is InlineType.DATETIME
    assert dictionary.kind(dictionary.encode(ox.NamedNode("http://e/x"))) is TermKind.IRI
    assert dictionary.kind(dictionary.encode(ox.BlankNode("b"))) is TermKind.BLANK_NODE
    triple = ox.Triple(ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p"), ox.Literal("o"))
    assert dictionary.kind(dictionary.encode(triple)) is TermKind.TRIPLE
    # Terms the Store makes equal (one value of two integer types, "1.5" and "1.50"): one id.
    assert dictionary.encode(typed("5", "byte")) == dictionary.encode(typed("5", "int"))
    assert dictionary.encode(typed("1.5", "decimal")) == dictionary.encode(typed("1.50", "decimal"))
    assert dictionary.encode(typed("5", "integer")) != dictionary.encode(typed("5", "decimal"))


@dictionaries
@given(st.lists(st.integers(-(1 << 57), (1 << 57) - 1), min_size=2, max_size=10))
def test_integer_ids_sort_as_their_values(new_dictionary, values):
    dictionary = new_dictionary()
    ids = {value: dictionary.encode(typed(str(value), "integer")) for value in values}
    assert sorted(ids, key=ids.get) == sorted(ids)


@dictionaries
@given(st.lists(st.datetimes(datetime(1, 1, 2), datetime(4199, 1, 1)), min_size=2, max_size=10))
def test_utc_datetime_ids_sort_as_their_instants(new_dictionary, moments):
    dictionary = new_dictionary()
    moments = [m.replace(microsecond=m.microsecond // 1000 * 1000) for m in moments]
    ids = {}
    for moment in moments:
        ids[moment] = dictionary.encode(typed(canonical_datetime(moment) + "Z", "dateTime"))
    assert sorted(ids, key=ids.get) == sorted(ids)


@dictionaries
def test_offset_datetimes_keep_their_timezone_and_instant(new_dictionary):
    dictionary = new_dictionary()
    # The same instant written three ways: three terms, three ids, each decoding to its own form.
    forms = ["2024-03-01T12:00:00Z", "2024-03-01T17:30:00+05:30", "2024-02-29T23:15:00-12:45"]
    instants = {
        datetime.fromisoformat(form.replace("Z", "+00:00")).astimezone(timezone.utc) for form in forms
    }
    assert len(instants) == 1
    ids = [dictionary.encode(typed(form, "dateTime")) for form in forms]
    assert len(set(ids)) == 3 and all(is_inline(i) for i in ids)
    assert [dictionary.decode(i).value for i in ids] == forms
    later = dictionary.encode(typed("2024-03-01T12:00:00.001Z", "dateTime"))
    assert later > ids[0]


# --- compiled codec == reference codec ----------------------------------------------------------


def test_codec_follows_cqels_pure_python():
    assert encoding.COMPILED is not use_pure_python()
    assert (TermDictionary is TermDictionaryPython) is use_pure_python()
    assert (inline_id is inline_id_python) is use_pure_python()
    assert (decode_inline is decode_inline_python) is use_pure_python()


@settings(max_examples=1000)
@given(literals | canonical_literals)
def test_compiled_codec_matches_the_reference(literal):
    term_id = _encoding.inline_id(literal)
    assert term_id == inline_id_python(literal)
    if term_id is not None:
        assert _encoding.decode_inline(term_id) == decode_inline_python(term_id) == literal


@dictionaries
@pytest.mark.parametrize("codec", [_encoding.decode_inline, decode_inline_python], ids=["compiled", "python"])
def test_decode_inline_refuses_dictionary_ids(new_dictionary, codec):
    dictionary = new_dictionary()
    term_id = dictionary.encode(ox.NamedNode("http://e/x"))
    with pytest.raises(ValueError, match="dictionary id"):
        codec(term_id)
    with pytest.raises(ValueError, match="no inline type"):
        codec(-(1 << 63) | (31 << 58))


# --- reference counts --------------------------------------------------------------------------


@dictionaries
def test_entries_are_released_when_the_last_reference_goes(new_dictionary):
    dictionary = new_dictionary()
    iri = ox.NamedNode("http://example.org/sensor")
    first = dictionary.encode(iri)
    assert dictionary.encode(iri) == first and dictionary.refcount(first) == 2
    dictionary.incref(first)
    assert dictionary.refcount(first) == 3
    assert dictionary.lookup(iri) == first and dictionary.refcount(first) == 3  # lookup takes none
    dictionary.decref(first)
    dictionary.decref(first)
    assert dictionary.decode(first) == iri and iri in dictionary
    dictionary.decref(first)
    assert len(dictionary) == 0 and dictionary.refcount(first) == 0
    assert iri not in dictionary and dictionary.lookup(iri) is None
    with pytest.raises(KeyError, match="released"):
        dictionary.decode(first)
    with pytest.raises(KeyError):
        dictionary.decref(first)
    with pytest.raises(KeyError):
        dictionary.incref(first)
    again = dictionary.encode(iri)
    assert again != first  # serial numbers are never reused
    assert dictionary.decode(again) == iri


@dictionaries
def test_shared_terms_live_as_long_as_any_holder(new_dictionary):
    dictionary = new_dictionary()
    window_a = dictionary.encode_many([ox.NamedNode("http://e/a"), ox.Literal("x"), ox.BlankNode("b")])
    window_b = dictionary.encode_many([ox.Literal("x"), ox.Literal("y", language="en")])
    assert len(dictionary) == 4
    dictionary.decref_many(window_a)
    assert len(dictionary) == 2
    assert dictionary.decode_row(window_b) == (ox.Literal("x"), ox.Literal("y", language="en"))
    dictionary.decref_many(window_b)
    assert len(dictionary) == 0


@dictionaries
@pytest.mark.parametrize("value", ["http://e/x", IRI("http://e/x"), 42, None, ox.Variable("x")])
def test_only_pyoxigraph_terms_are_encoded(new_dictionary, value):
    dictionary = new_dictionary()
    with pytest.raises(TypeError, match="constant_term"):
        dictionary.encode(value)
    assert dictionary.lookup(value) is None and value not in dictionary


# --- the compiled dictionary and its twin agree -------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("encode"), terms | triples),
        st.tuples(st.just("encode_triples"), st.lists(triples | triple_terms, max_size=4)),
        # a predicate filter: ids picked among those issued so far (an index past them: no id)
        st.tuples(st.just("encode_triples_kept"), st.tuples(st.lists(triples | triple_terms, max_size=4), st.lists(st.integers(0, 40), max_size=3))),
        st.tuples(st.just("lookup"), terms | triples),
        st.tuples(st.sampled_from(["decode", "incref", "decref", "refcount"]), st.integers(0, 40)),
    ),
    max_size=60,
)


def _apply(dictionary, issued: list[int], operation) -> object:
    """One operation, its outcome as comparable data (an error by its type)."""
    name, argument = operation
    try:
        if name == "encode":
            issued.append(dictionary.encode(argument))
            return issued[-1]
        if name == "encode_triples":
            ids = dictionary.encode_triples(argument)
            issued.extend(ids)
            return ids.tolist()
        if name == "encode_triples_kept":
            rows, picks = argument
            ids = dictionary.encode_triples(rows, frozenset(issued[i] for i in picks if i < len(issued)))
            issued.extend(ids)
            return ids.tolist()
        if name == "lookup":
            return dictionary.lookup(argument), argument in dictionary
        term_id = issued[argument % len(issued)] if issued else argument
        result = getattr(dictionary, name)(term_id)
        if name == "decode":
            return str(result), type(result).__name__
        return result
    except (KeyError, ValueError) as error:
        return type(error).__name__


@settings(max_examples=300)
@given(operations)
def test_the_compiled_dictionary_and_its_twin_agree_step_by_step(steps):
    compiled, twin = _dictionary.TermDictionary(), TermDictionaryPython()
    issued_compiled: list[int] = []
    issued_twin: list[int] = []
    for operation in steps:
        assert _apply(compiled, issued_compiled, operation) == _apply(twin, issued_twin, operation), operation
        assert len(compiled) == len(twin)
    assert sorted(issued_compiled) == sorted(issued_twin)
    for term_id in set(issued_compiled):
        assert compiled.refcount(term_id) == twin.refcount(term_id)
        assert compiled.kind(term_id) is twin.kind(term_id)


@dictionaries
def test_encode_triples_takes_one_reference_per_position(new_dictionary):
    dictionary = new_dictionary()
    s, p = ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p")
    rows = [ox.Triple(s, p, typed("1", "integer")), ox.Triple(s, p, ox.Literal("x", language="en"))]
    ids = dictionary.encode_triples(rows)
    assert ids.typecode == "q" and ids.tolist() == [dictionary.lookup(t) for row in rows for t in row]
    assert dictionary.refcount(ids[0]) == 2 and dictionary.refcount(ids[1]) == 2 and is_inline(ids[2])
    with pytest.raises(TypeError, match="not a triple"):
        dictionary.encode_triples([ox.Triple(s, p, ox.Literal("y")), (s, p, s)])
    assert dictionary.lookup(ox.Literal("y")) is None and dictionary.refcount(ids[0]) == 2  # nothing taken
    dictionary.incref_many(ids)
    dictionary.decref_many(ids)
    dictionary.decref_many(ids)
    assert len(dictionary) == 0


@dictionaries
def test_encode_triples_with_a_predicate_filter_enters_nothing_of_the_triples_it_leaves_out(new_dictionary):
    dictionary = new_dictionary()
    s, p, q = ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p"), ox.NamedNode("http://e/q")
    kept = dictionary.encode(p)
    rows = [ox.Triple(s, q, ox.Literal("left")), ox.Triple(s, p, ox.Literal("in")), ox.Quad(ox.NamedNode("http://e/o"), q, s)]
    ids = dictionary.encode_triples(rows, frozenset({kept}))
    assert dictionary.decode_row(ids) == (s, p, ox.Literal("in"))
    assert dictionary.lookup(q) is None and dictionary.lookup(ox.Literal("left")) is None and dictionary.refcount(kept) == 2
    assert dictionary.encode_triples(rows, frozenset()).tolist() == []
    with pytest.raises(TypeError, match="not a triple"):  # checked also where the filter leaves the triple out
        dictionary.encode_triples([ox.Triple(s, p, ox.Literal("y")), (s, q, s)], frozenset({kept}))
    assert dictionary.lookup(ox.Literal("y")) is None and dictionary.refcount(kept) == 2  # nothing taken
    # The compiled dictionary copies a frozenset's ids once; a set changed in place is read again.
    changing = {kept}
    taken = [dictionary.encode_triples(rows, changing)]
    changing.add(dictionary.encode(q))
    taken += [dictionary.encode_triples(rows, changing), dictionary.encode_triples(rows, frozenset({kept}))]
    assert [len(row) // 3 for row in taken] == [1, 3, 1]
    for row in [ids, *taken, [kept, dictionary.lookup(q)]]:
        dictionary.decref_many(row)
    assert len(dictionary) == 0


@dictionaries
def test_released_entries_make_room_for_terms_of_every_length(new_dictionary):
    # Forms from a few bytes to past the compiled dictionary's largest slab block (240 bytes of
    # form), ASCII and two-byte UTF-8: each round releases half the live terms and encodes new ones
    # of the same lengths, which take the released blocks; every live term still reads back as
    # itself, and no id is issued twice.
    dictionary = new_dictionary()

    def term(serial: int, length: int):
        text = ("é" if serial % 3 == 0 else "a") * length + str(serial)
        return ox.Literal(text) if serial % 2 else ox.NamedNode(f"http://e/{text}")

    live: dict = {}
    issued: set[int] = set()
    for round_ in range(4):
        terms = [term(round_ * 1000 + i, length) for i, length in enumerate(range(0, 320, 3))]
        ids = dictionary.encode_many(terms)
        assert issued.isdisjoint(ids)
        issued.update(ids)
        live.update(zip(terms, ids))
        assert dictionary.decode_row(list(live.values())) == tuple(live)
        assert all(dictionary.lookup(t) == i for t, i in live.items())
        released = list(live)[::2]
        dictionary.decref_many([live.pop(t) for t in released])
        assert all(dictionary.lookup(t) is None for t in released) and len(dictionary) == len(live)
    dictionary.decref_many(list(live.values()))
    assert len(dictionary) == 0


@dictionaries
def test_many_entries_grow_and_shrink_the_tables(new_dictionary):
    dictionary = new_dictionary()
    terms = [ox.NamedNode(f"http://e/{i}") for i in range(5000)]
    ids = dictionary.encode_many(terms)
    assert len(dictionary) == 5000 and len(set(ids)) == 5000
    dictionary.decref_many(ids[::2])
    assert len(dictionary) == 2500
    assert all(dictionary.lookup(t) is None for t in terms[::2])
    assert [dictionary.lookup(t) for t in terms[1::2]] == ids[1::2]
    assert dictionary.decode_row(ids[1::2]) == tuple(terms[1::2])
    dictionary.decref_many(ids[1::2])
    assert len(dictionary) == 0 and dictionary.encode(terms[0]) not in ids
