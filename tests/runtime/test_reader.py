"""The compiled N-Triples reader: whatever it reads, pyoxigraph's Turtle parser reads to the same terms.

``read_ntriples`` returns None for any text it is not sure about (the engine then parses it with
pyoxigraph), so the property is one-sided: when it returns forms, pyoxigraph must accept the text
and give the same triples, each term written as ``str()`` writes it. The text is drawn from
fragments near the edges of what it accepts (IRI characters, escapes, language tags, white space,
comments), and the plain shapes streams send must be read, not left to pyoxigraph.
"""

import pyoxigraph as ox
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cqels_endpoint.runtime._dictionary import TermDictionary
from cqels_endpoint.runtime._reader import read_ntriples

XSD = "http://www.w3.org/2001/XMLSchema#"
BASE = "http://base.example.org/dir/doc"


def form(term) -> str:
    """The N-Triples form the compiled dictionary keys a term by."""
    if isinstance(term, ox.NamedNode):
        return f"<{term.value}>"
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(term)


def pyoxigraph_forms(text: str, *, renamed: bool, syntax: ox.RdfFormat = ox.RdfFormat.TURTLE) -> list[str] | None:
    """The forms of the triples pyoxigraph reads from ``text`` as the engine parses an event (no
    base, labels kept) or as the HTTP layer does (a base, blank nodes renamed); None if it refuses."""
    try:
        if renamed:
            quads = list(ox.parse(text, format=syntax, base_iri=BASE, rename_blank_nodes=True))
        else:
            quads = list(ox.parse(text, format=syntax))
    except SyntaxError:
        return None
    return [form(term) for quad in quads for term in (quad.subject, quad.predicate, quad.object)]


iri_characters = st.sampled_from([
    *"aZ09:/?#[]@!$&'()*+,;=%-._~", "%2F", "%zz", "%4", "é", " ", "<", '"', "{", "\\", "^", "`", "|", "//", "/./",
    "/../", ":80", ":x",
])
edgy_iris = st.builds(
    lambda scheme, rest: f"<{scheme}{''.join(rest)}>",
    st.sampled_from(["http:", "http://", "https://ex.org", "urn:", "x+y.z-w:", "1a:", ":", "", "HTTP://Ex.Org", "http://u:p@h:8080", "http://a@b@c"]),
    st.lists(iri_characters, max_size=8),
)
plain_iris = st.builds(
    lambda prefix, path: f"<{prefix}{path}>",
    st.sampled_from(["http://ex.org/", "urn:x:", "https://u@h:1/a?", "http://h#"]),
    st.text(st.sampled_from("aZ09/:@!$&'()*+,;=-._~?"), max_size=6),
)
iris = st.one_of(plain_iris, plain_iris, edgy_iris)
texts = st.lists(
    st.sampled_from(["a", "Z", "0", " ", "é", "a", "Z", "0", " ", "é", "ü", "\U0001f600", "\t", "\\n", '\\"', "\\u00e9", '"', "\\", "\x7f", "\ufffe",
                     "\uffff", "#", "."]),
    max_size=6,
).map("".join)
tags = st.sampled_from([
    "en", "EN", "en-US", "en-us", "zh-Hant-TW", "sr-Latn", "es-419", "fra", "en-x", "en-USA", "e", "en-US-x-a",
    "de-CH-1901", "en--ltr", "ar--rtl", "i-klingon", "en-", "123",
])
datatypes = st.sampled_from([
    XSD + "integer", XSD + "string", XSD + "decimal", "http://e/dt",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString", "urn:x",
])
literals = st.one_of(
    texts.map(lambda text: f'"{text}"'),
    st.builds(lambda text, tag: f'"{text}"@{tag}', texts, tags),
    st.builds(lambda text, datatype: f'"{text}"^^<{datatype}>', texts, datatypes),
    st.builds(lambda text, datatype: f'"{text}"^^{datatype}', texts, iris),
    st.sampled_from(["1", "1.5", "true", "'x'", '"""x"""', "<<( <http://a> <http://b> <http://c> )>>"]),
)
blank_nodes = st.sampled_from(["_:b", "_:b1", "_:1", "_:_x", "_:a-b", "_:-a", "_:a.b", "_:", "[]", "_:é"])
spaces = st.sampled_from([" ", " ", " ", "", "  ", "\t", "\n", "\r\n", " # comment\n", "#c\n"])
plain_literals = st.builds(
    lambda text, suffix: f'"{text}"{suffix}',
    st.text(st.sampled_from("aZ0 é-:\U0001f600"), max_size=5),
    st.sampled_from(["", "@en", "@EN-gb", f"^^<{XSD}integer>", f"^^<{XSD}string>", "^^<http://e/dt>"]),
)
# Mostly terms the reader should read, and now and then one near the edge.
subjects = st.one_of(plain_iris, plain_iris, plain_iris, st.sampled_from(["_:b", "_:b1"]), blank_nodes, edgy_iris)
predicates = st.one_of(plain_iris, plain_iris, plain_iris, edgy_iris, st.just("a"))
objects = st.one_of(plain_iris, plain_literals, plain_literals, plain_iris, blank_nodes, edgy_iris, literals)


@st.composite
def documents(draw) -> str:
    statements = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 1, 2, 2, 3, 4, 0]))):
        parts = [draw(subjects), draw(spaces), draw(predicates), draw(spaces), draw(objects), draw(spaces),
                 draw(st.sampled_from([".", ".", ".", ".", ".", ".", ".", ";", ",", ""])), draw(spaces)]
        statements.append("".join(parts))
    return "".join(statements)


@settings(max_examples=3000)
@given(documents(), st.booleans(), st.booleans(), st.sampled_from([ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES]))
# A blank node label runs on through a dot: "_:b._:b" is the label "b._" and then an error.
@example("<http://a> <http://p> _:b._:b <http://p> <http://o> .", False, False, ox.RdfFormat.TURTLE)
def test_what_the_reader_reads_pyoxigraph_reads_to_the_same_terms(text, renamed, as_bytes, syntax):
    one_per_line = syntax == ox.RdfFormat.N_TRIPLES
    forms = read_ntriples(text.encode("utf-8") if as_bytes else text, keep_blank_nodes=not renamed, one_per_line=one_per_line)
    if forms is None:
        return
    assert forms.forms() == pyoxigraph_forms(text, renamed=renamed, syntax=syntax)
    assert len(forms) * 3 == len(forms.forms())


PLAIN = [
    '<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .',
    '<http://ex.org/s> <http://ex.org/p> "v" .\n<http://ex.org/s> <http://ex.org/q> "v"@EN-gb .\n',
    '<urn:x:s> <http://ex.org/p> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .  # trailing\r\n',
    '_:b1 <http://ex.org/p> "café \U0001f600"^^<http://www.w3.org/2001/XMLSchema#string>.',
    '# only a comment\n\n<https://u:p@ex.org:8080/a/b;c?q=1&r=%2F#frag> <http://ex.org/p> _:x .',
    "",
]


@pytest.mark.parametrize("text", PLAIN)
@pytest.mark.parametrize("syntax", [ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES], ids=["turtle", "n-triples"])
def test_plain_stream_events_are_read_without_pyoxigraph(text, syntax):
    forms = read_ntriples(text, one_per_line=syntax == ox.RdfFormat.N_TRIPLES)
    assert forms is not None
    assert forms.forms() == pyoxigraph_forms(text, renamed=False, syntax=syntax)


@pytest.mark.parametrize(
    "text",
    [
        "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> . <http://ex.org/s> <http://ex.org/p> <http://ex.org/q> .",
        "<http://ex.org/s>\n<http://ex.org/p> <http://ex.org/o> .",
        "<http://ex.org/s> <http://ex.org/p> # a comment\n<http://ex.org/o> .",
    ],
)
def test_as_n_triples_a_statement_takes_one_line(text):
    assert read_ntriples(text) is not None  # as Turtle
    assert read_ntriples(text, one_per_line=True) is None


@pytest.mark.parametrize(
    "text",
    [
        '<http://ex.org/s> <http://ex.org/p> "v"',  # no dot
        '<http://ex.org/s> <http://ex.org/p> "a\\nb" .',  # an escape
        '<s> <http://ex.org/p> "v" .',  # a relative IRI
        '<http://ex.org/a/../s> <http://ex.org/p> "v" .',  # a dot segment
        '@prefix ex: <http://ex.org/> .\nex:s ex:p "v" .',  # Turtle
        '<http://ex.org/s> <http://ex.org/p> "v"@en--ltr .',  # a base direction
        '<http://ex.org/s> <http://ex.org/p> 42 .',
        '<http://[::1]/s> <http://ex.org/p> "v" .',
    ],
)
def test_anything_else_is_left_to_pyoxigraph(text):
    assert read_ntriples(text) is None


def test_read_forms_encode_as_the_parsed_terms():
    text = "".join(PLAIN)
    dictionary = TermDictionary()
    from_forms = dictionary.encode_triples(read_ntriples(text))
    parsed = [quad.triple for quad in ox.parse(text, format=ox.RdfFormat.TURTLE)]
    assert from_forms.tolist() == dictionary.encode_triples(parsed).tolist()
    assert dictionary.decode_row(from_forms) == tuple(term for triple in parsed for term in triple)


@settings(max_examples=500)
@given(documents(), st.data())
def test_read_forms_filtered_by_predicate_encode_as_the_parsed_terms(text, data):
    # The predicate filter of a stream (engine.fanout): the same triples left out of either input.
    forms = read_ntriples(text)
    if forms is None:
        return
    parsed = [quad.triple for quad in ox.parse(text, format=ox.RdfFormat.TURTLE)]
    kept = data.draw(st.sets(st.sampled_from(sorted({t.predicate.value for t in parsed} | {"http://ex.org/absent"}))))
    dictionary = TermDictionary()
    predicates = frozenset(dictionary.encode(ox.NamedNode(iri)) for iri in kept)
    before = len(dictionary)
    from_forms = dictionary.encode_triples(forms, predicates)
    assert dictionary.decode_row(from_forms) == tuple(term for triple in parsed if triple.predicate.value in kept for term in triple)
    from_triples = dictionary.encode_triples(parsed, predicates)
    assert from_triples.tolist() == from_forms.tolist()
    dictionary.decref_many(from_forms)
    dictionary.decref_many(from_triples)
    assert len(dictionary) == before


def test_renaming_blank_nodes_leaves_them_to_pyoxigraph():
    assert read_ntriples("_:b <http://ex.org/p> <http://ex.org/o> .", keep_blank_nodes=False) is None
    assert read_ntriples("<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .", keep_blank_nodes=False) is not None
