"""SPARQL JSON written from term ids equals the JSON of the decoded rows, and an emission read
only as JSON is never decoded yet says the same as one read as terms."""

import json
import re

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.engine import Engine
from cqels_endpoint.engine.emission import BindingsWriter, TemplateWriter, bindings_json, instantiate
from cqels_endpoint.query.ast import TriplePattern
from cqels_endpoint.runtime import _dictionary
from cqels_endpoint.runtime.encoding import TermDictionaryPython
from cqels_endpoint.terms import IRI, BlankNode, Literal, Var
from tests.runtime.test_encoding import terms, triple_terms

SCHEMA = ("a", "b", "c")
S = "http://example.org/s"
EX = "http://example.org/"


@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
@settings(max_examples=300)
@given(rows=st.lists(st.tuples(*[st.none() | terms | triple_terms] * 3), max_size=12), capacity=st.sampled_from([1, 4, 1 << 16]))
def test_bindings_written_from_ids_equal_the_decoded_rows_json(new_dictionary, rows, capacity):
    dictionary = new_dictionary()
    writer = BindingsWriter(dictionary, SCHEMA, capacity=capacity)
    id_rows = [tuple(None if term is None else dictionary.encode(term) for term in row) for row in rows]
    # Decoded: the Store form of each term (runtime/canonical.py), which is what the ids stand for.
    decoded = [{name: dictionary.decode(term_id) for name, term_id in zip(SCHEMA, row) if term_id is not None} for row in id_rows]
    # Twice: the second pass reads the cached texts (or refills a cache smaller than the rows).
    for _ in range(2):
        text = writer.write(id_rows)
        assert text == bindings_json(decoded)
        assert json.loads(text) == json.loads(bindings_json(decoded))


# Template positions: the row's variables, one the rows never bind, blank nodes, constants of each
# kind (an ill-typed literal is still a term; a literal subject or predicate is ill-formed).
template_terms = st.sampled_from([
    Var("a"), Var("b"), Var("c"), Var("unbound"), BlankNode("x"), BlankNode("y"), IRI(EX + "p"),
    Literal("v"), Literal("3", datatype="http://www.w3.org/2001/XMLSchema#integer"), Literal("hi", language="en"),
])  # fmt: skip
templates = st.lists(st.builds(TriplePattern, template_terms, template_terms, template_terms), min_size=1, max_size=5)


def canonical_blank_nodes(ntriples: str) -> str:
    """Blank node labels renamed in order of appearance: fresh labels differ between two runs."""
    names: dict[str, str] = {}
    return re.sub(r"_:\S+", lambda m: names.setdefault(m.group(0), f"_:n{len(names)}"), ntriples)


@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
@settings(max_examples=300)
@given(template=templates, rows=st.lists(st.tuples(*[st.none() | terms | triple_terms] * 3), max_size=8))
def test_construct_written_from_ids_equals_instantiating_the_decoded_rows(new_dictionary, template, rows):
    dictionary = new_dictionary()
    writer = TemplateWriter(dictionary, SCHEMA, template)
    id_rows = [tuple(None if term is None else dictionary.encode(term) for term in row) for row in rows]
    # Decoded: the Store form of each term (runtime/canonical.py), which is what the ids stand for.
    decoded = [{name: dictionary.decode(term_id) for name, term_id in zip(SCHEMA, row) if term_id is not None} for row in id_rows]
    expected = "".join(f"{triple} .\n" for triple in instantiate(template, decoded))
    assert canonical_blank_nodes(writer.write(id_rows)) == canonical_blank_nodes(expected)


QUERIES = [
    (f"SELECT ?who ?n WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }}", "ISTREAM"),
    (f"SELECT ?who ?n WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }}", "DSTREAM"),
    (f"SELECT ?who (COUNT(*) AS ?c) WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }} GROUP BY ?who", "RSTREAM"),
    (f"SELECT ?n WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }} ORDER BY DESC(?n) LIMIT 2", "RSTREAM"),
    (f"CONSTRUCT {{ ?who <{EX}saw> ?n . ?n <{EX}by> ?who }} WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }}", "ISTREAM"),
    (f"CONSTRUCT {{ <{EX}seen> <{EX}value> ?n }} WHERE {{ STREAM <{S}> [RANGE 10ms] {{ ?who <{EX}at> ?n }} }}", "RSTREAM"),
]
EVENTS = [
    (1, f'<{EX}ann> <{EX}at> "hall"@en . _:b <{EX}at> 3 .'),
    (4, f'<{EX}bob> <{EX}at> "a \\"quoted\\"\\nline ✓" . <{EX}ann> <{EX}at> 2.5e0 .'),
    (9, f"<{EX}cat> <{EX}at> <{EX}room> ."),
    (13, f'<{EX}ann> <{EX}at> "hall"@en .'),
    (25, f"<{EX}dan> <{EX}at> true ."),
]


@pytest.mark.parametrize("mode", ["incremental", "recompute"])
@pytest.mark.parametrize(("text", "r2s"), QUERIES)
def test_json_only_subscribers_get_the_same_json_without_decoding(text, r2s, mode):
    engine = Engine()
    as_terms = engine.register(text, name="terms", r2s=r2s, mode=mode)
    as_json = engine.register(text, name="json", r2s=r2s, mode=mode)
    term_emissions, json_emissions = [], []
    as_terms.subscribe(term_emissions.append)
    as_json.subscribe(json_emissions.append, json_only=True)
    for time, body in EVENTS:
        engine.push(S, body, time=time)
    engine.advance(40)
    assert len(json_emissions) == len(term_emissions) > 2
    for by_json, by_terms in zip(json_emissions, term_emissions):
        # Never decoded: SELECT rows stay ids, CONSTRUCT triples are N-Triples text.
        assert by_json.rows is None and by_json.triples is None
        reference = json.loads(json.dumps(by_terms.to_json(), ensure_ascii=False))
        reference["query"] = "json"
        if by_terms.constructed:
            assert canonical_blank_nodes(by_json.to_ntriples()) == canonical_blank_nodes(by_terms.to_ntriples())
            assert set(by_json.graph()) == set(by_terms.triples)
            assert json.loads(by_json.json_text()) == reference
            continue
        assert json.loads(by_json.json_text()) == reference
        assert by_json.to_sparql_json() == by_terms.to_sparql_json()
        # The text is what json.dumps writes for the same object.
        assert by_terms.json_text() == json.dumps(by_terms.to_json(), ensure_ascii=False)
        assert by_json.json_text() == json.dumps(by_json.to_json(), ensure_ascii=False)


def test_a_term_subscriber_next_to_a_json_one_gets_rows_and_json():
    engine = Engine()
    query = engine.register(QUERIES[0][0], name="both")
    seen_terms, seen_json = [], []
    query.subscribe(seen_terms.append)
    unsubscribe = query.subscribe(seen_json.append, json_only=True)
    engine.push(S, EVENTS[0][1], time=1)
    emission = seen_terms[0]
    assert emission is seen_json[0]
    assert len(emission.rows) == 2 and ox.NamedNode(EX + "ann") in {row["who"] for row in emission.rows}
    assert json.loads(emission.bindings) == emission.to_sparql_json()["results"]["bindings"]
    unsubscribe()
    engine.push(S, EVENTS[1][1], time=4)
    assert seen_terms[1].bindings is None and seen_terms[1].rows  # nobody reads JSON any more
