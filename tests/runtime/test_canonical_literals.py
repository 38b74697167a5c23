"""Both term dictionaries key literals by the form pyoxigraph's Store gives them (``runtime.canonical``):
random lexical forms of every datatype the Store canonicalises, valid canonical, valid non-canonical
and invalid, given as pyoxigraph terms, as the compiled N-Triples reader's forms and inside quoted
triples, decode to what a Store round trip gives, and two literals the Store makes equal get one id."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_encoding import stored  # the oracle: a pyoxigraph Store round trip

from cqels_endpoint.runtime import _dictionary, canonical
from cqels_endpoint.runtime.canonical import CANONICALISED, XSD
from cqels_endpoint.runtime.encoding import TermDictionaryPython, canonical_inline, inline_id, is_inline
from cqels_endpoint.runtime.streams import read_plain_ntriples

dictionaries = pytest.mark.parametrize(
    "new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"]
)


def typed(lexical: str, name: str) -> ox.Literal:
    return ox.Literal(lexical, datatype=ox.NamedNode(XSD + name))


INTEGER_TYPES = (
    "integer", "long", "int", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
)  # fmt: skip
# The XSD datatypes the Store keeps as written (and the ones of CANONICALISED: every XSD datatype).
KEPT_TYPES = (
    "string", "normalizedString", "token", "language", "Name", "NCName", "NMTOKEN", "ID", "anyURI",
    "QName", "hexBinary", "base64Binary",
)  # fmt: skip

signs = st.sampled_from(["", "", "-", "+"])
digits = st.from_regex(r"[0-9]{1,22}", fullmatch=True)
zeros = st.sampled_from(["", "0", "00"])


@st.composite
def integer_forms(draw) -> str:
    value = draw(st.integers(-(1 << 66), 1 << 66) | st.sampled_from([0, 1, -1, 127, 128, 255, 256, (1 << 63) - 1, 1 << 63]))
    sign = "-" if value < 0 else draw(st.sampled_from(["", "", "+"]))
    return sign + draw(zeros) + str(abs(value))


@st.composite
def decimal_forms(draw) -> str:
    whole, fraction = draw(st.sampled_from(["", "0"]) | digits), draw(st.none() | st.from_regex(r"[0-9]{0,20}", fullmatch=True))
    return draw(signs) + whole + ("" if fraction is None else "." + fraction + draw(zeros))


@st.composite
def double_forms(draw) -> str:
    value = draw(st.floats(allow_nan=True, allow_infinity=True, width=draw(st.sampled_from([32, 64]))))
    style = draw(st.sampled_from(["repr", "e", "f", "positional", "exponent"]))
    if style == "repr":
        return repr(value).replace("inf", "INF").replace("nan", "NaN")
    if style == "e":
        return f"{value:.{draw(st.integers(0, 17))}E}"
    if style == "f":
        return f"{value:.{draw(st.integers(0, 8))}f}"
    exponent = f"{draw(st.sampled_from('eE'))}{draw(signs)}{draw(st.integers(0, 320))}" if style == "exponent" else ""
    return draw(decimal_forms()) + exponent


zones = st.sampled_from(["", "Z", "+00:00"]) | st.sampled_from(
    ["-00:00", "+14:00", "-14:00", "+14:01", "+05:30", "-09:45", "+1:00"]
)
fractions = st.sampled_from(["", ".5", ".05", ".123"]) | st.sampled_from([".50", ".1230", ".123456789", ".0", "."])


# Mostly valid parts (so that valid forms, canonical or not, come often), sometimes out of range.
def _part(valid: st.SearchStrategy[int], invalid: list[int]) -> st.SearchStrategy[str]:
    return st.one_of(valid, valid, valid, st.sampled_from(invalid)).map(lambda value: f"{value:02d}")


@st.composite
def date_parts(draw) -> tuple[str, str, str]:
    year = draw(
        st.sampled_from(["1969", "1970", "2000", "2024", "4200", "9999"])
        | st.sampled_from(["0001", "0000", "-0001", "10000", "02024"])
    )
    return year, draw(_part(st.integers(1, 12), [0, 13])), draw(_part(st.integers(1, 28), [0, 29, 30, 31, 32]))


@st.composite
def time_forms(draw) -> str:
    hour = draw(_part(st.integers(0, 23), [24, 25]))
    return f"{hour}:{draw(_part(st.integers(0, 59), [60]))}:{draw(_part(st.integers(0, 59), [60]))}{draw(fractions)}"


@st.composite
def datetime_forms(draw) -> str:
    year, month, day = draw(date_parts())
    return f"{year}-{month}-{day}T{draw(time_forms())}{draw(zones)}"


@st.composite
def duration_forms(draw) -> str:
    parts = [f"{draw(st.integers(0, 30))}{unit}" for unit in "YMD" if draw(st.booleans())]
    times = [f"{draw(st.integers(0, 100))}{unit}" for unit in "HM" if draw(st.booleans())]
    if draw(st.booleans()):
        times.append(f"{draw(st.integers(0, 4000))}{draw(fractions)}S")
    body = "".join(parts) + ("T" + "".join(times) if times or draw(st.booleans()) else "")
    return draw(st.sampled_from(["", "-"])) + "P" + body


def _g(draw, shape: str) -> str:
    year, month, day = draw(date_parts())
    return shape.format(year=year, month=month, day=day) + draw(zones)


# Lexical forms by datatype: canonical and non-canonical values and invalid forms.
FORMS = {
    **dict.fromkeys(INTEGER_TYPES, integer_forms()),
    "decimal": decimal_forms(),
    "double": double_forms(),
    "float": double_forms(),
    "boolean": st.sampled_from(["true", "false", "1", "0", "TRUE", " true", "", "01"]),
    "dateTime": datetime_forms(),
    "dateTimeStamp": datetime_forms(),
    "date": st.builds(lambda parts, zone: "-".join(parts) + zone, date_parts(), zones),
    "time": st.builds(lambda time, zone: time + zone, time_forms(), zones),
    "duration": duration_forms(),
    "dayTimeDuration": duration_forms(),
    "yearMonthDuration": duration_forms(),
    "gYear": st.composite(lambda draw: _g(draw, "{year}"))(),
    "gYearMonth": st.composite(lambda draw: _g(draw, "{year}-{month}"))(),
    "gMonth": st.composite(lambda draw: _g(draw, "--{month}"))(),
    "gMonthDay": st.composite(lambda draw: _g(draw, "--{month}-{day}"))(),
    "gDay": st.composite(lambda draw: _g(draw, "---{day}"))(),
}
# Anything at all, for every datatype: text of the characters the forms above are made of.
junk = st.text(st.sampled_from("0123456789+-.:TZPYMDHSeE INFNaN"), max_size=14)
literals = st.sampled_from(sorted(FORMS)).flatmap(
    lambda name: st.builds(typed, FORMS[name] | junk, st.just(name))
)


def test_canonicalised_datatypes_are_every_xsd_type_with_values():
    assert {XSD + name for name in FORMS} == CANONICALISED


@settings(max_examples=200)
@given(st.sampled_from(KEPT_TYPES), junk | st.text(max_size=10))
def test_the_store_keeps_other_xsd_datatypes_as_written(name, lexical):
    # What makes CANONICALISED complete: the Store rewrites no literal of another XSD datatype.
    literal = typed(lexical, name)
    assert stored(literal) == literal
    assert canonical.canonical_literal(literal) is literal


@dictionaries
@settings(max_examples=400)
@given(st.lists(literals, min_size=1, max_size=8))
@example([typed("2020-01-01T00:00:00+00:00", "dateTime"), typed("10.50", "decimal"), typed("300", "byte")])
@example([typed("5", "int"), typed("1.0E0", "double"), typed("-0.0", "float"), typed("PT60S", "duration")])
def test_literals_decode_to_their_store_form(new_dictionary, batch):
    dictionary = new_dictionary()
    ids = dictionary.encode_many(batch)
    for literal, term_id in zip(batch, ids):
        form = stored(literal)
        decoded = dictionary.decode(term_id)
        assert (decoded.value, decoded.datatype) == (form.value, form.datatype), literal
        assert dictionary.lookup(literal) == term_id == dictionary.lookup(form)
        assert is_inline(term_id) is (inline_id(form) is not None)
    # Two literals the Store makes equal share one id; others do not.
    by_form = {}
    for literal, term_id in zip(batch, ids):
        assert by_form.setdefault(stored(literal), term_id) == term_id
    assert len(set(ids)) == len(by_form)
    dictionary.decref_many(ids)
    assert len(dictionary) == 0


@pytest.mark.skipif(read_plain_ntriples("<urn:a> <urn:b> <urn:c> .") is None, reason="needs the compiled reader")
@settings(max_examples=400)
@given(st.lists(literals, min_size=1, max_size=8))
@example([typed("2020-01-01T00:00:00+00:00", "dateTime"), typed("10.50", "decimal"), typed("300", "byte")])
@example([typed("5", "int"), typed("3.50", "double"), typed("-0.0", "float"), typed("+INF", "double")])
def test_forms_from_the_compiled_reader_decode_to_their_store_form(batch):
    text = "".join(f"<urn:s> <urn:p> {literal} .\n" for literal in batch)
    forms = read_plain_ntriples(text)
    assert forms is not None
    dictionary = _dictionary.TermDictionary()
    ids = dictionary.encode_triples(forms)
    assert [dictionary.decode(term_id) for term_id in ids[2::3]] == [stored(literal) for literal in batch]
    assert list(ids[2::3]) == [dictionary.lookup(literal) for literal in batch]


@dictionaries
@settings(max_examples=150)
@given(literals, st.booleans())
def test_literals_inside_quoted_triples_take_their_store_form(new_dictionary, literal, nested):
    s, p = ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p")
    triple = ox.Triple(s, p, literal)
    if nested:
        triple = ox.Triple(ox.BlankNode("b"), p, triple)
    dictionary = new_dictionary()
    term_id = dictionary.encode(triple)
    assert dictionary.decode(term_id) == stored(triple)
    assert dictionary.encode(stored(triple)) == term_id


@dictionaries
def test_a_stream_01_is_the_static_1(new_dictionary):
    dictionary = new_dictionary()
    one = dictionary.encode(typed("1", "integer"))
    assert dictionary.encode(typed("01", "integer")) == one
    assert dictionary.encode(typed("+1", "int")) == one  # the Store types it xsd:integer
    assert dictionary.decode(dictionary.encode(typed("19.0", "decimal"))).value == "19"
    infinity = dictionary.encode(typed("+INF", "double"))
    assert dictionary.lookup(typed("INF", "double")) == infinity and len(dictionary) == 1
    assert dictionary.decode(dictionary.encode(typed("2020-01-01T00:00:00+00:00", "dateTime"))) == typed(
        "2020-01-01T00:00:00Z", "dateTime"
    )


@settings(max_examples=300)
@given(
    st.sampled_from(["integer", "byte", "unsignedLong", "decimal", "dateTime", "boolean"]).flatmap(
        lambda name: st.builds(typed, FORMS[name], st.just(name))
    )
)
@example(typed("2020-01-01T00:00:00+00:00", "dateTime"))
@example(typed("-10.500", "decimal"))
@example(typed("-5", "nonPositiveInteger"))
def test_inline_ids_are_rewritten_on_their_bits_as_the_store_writes_them(literal):
    term_id = inline_id(literal)
    if term_id is not None:
        assert canonical_inline(term_id) == inline_id(stored(literal))


@settings(max_examples=300)
@given(double_forms(), st.sampled_from(["double", "float"]))
def test_positional_doubles_are_rewritten_as_text_as_the_store_does(lexical, name):
    digits = canonical.DOUBLE_DIGITS if name == "double" else canonical.FLOAT_DIGITS
    rewritten = canonical.positional_double(lexical, digits)
    if rewritten is not None:
        assert rewritten == stored(typed(lexical, name)).value


def test_the_canonicalising_store_is_replaced_and_answers_the_same(monkeypatch):
    # pyoxigraph's in-memory store keeps what a removed quad took, so the process's canonicalising
    # store is replaced every _STORE_USES literals (issue 31); across replacements each literal
    # still reads as a Store round trip gives it.
    monkeypatch.setattr(canonical, "_STORE_USES", 7)
    first = canonical._STORE
    literals = [typed(f"2024-01-01T00:00:{k % 60:02d}.{k:07d}+02:00", "dateTime") for k in range(50)]
    literals += [typed(f"{k}.50", "decimal") for k in range(50)]
    assert [canonical.canonical_literal(literal) for literal in literals] == [stored(literal) for literal in literals]
    assert canonical._STORE is not first
