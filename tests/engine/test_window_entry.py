"""The compiled per-event glue of the incremental evaluator gives what its twins give: the window
entry (``engine/_incremental.pyx``) against ``IncrementalEvaluator.on_insert``/``on_expire``,
``release_rows`` against ``release_rows_python``, the compiled ``RowDecoder``
(``runtime/_r2s.pyx``) against ``RowDecoderPython``, and the compiled sink's ``rows`` against
``base.Sink.rows``."""

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.engine._incremental import WindowEntry, release_rows
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.engine.emission import RowDecoderPython
from cqels_endpoint.engine.incremental import IncrementalEvaluator, release_rows_python
from cqels_endpoint.operators import _sink
from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.base import Sink as PythonSink
from cqels_endpoint.runtime import _dictionary, _r2s
from cqels_endpoint.runtime.encoding import TermDictionaryPython
from tests.engine.test_emission_json import SCHEMA
from tests.runtime.test_encoding import terms

EX = "http://ex.org/"
QUERY = f"""SELECT ?s ?o WHERE {{ STREAM <{EX}s> [RANGE 1h] {{ ?s <{EX}p> ?o . ?s <{EX}q> ?o }} }}"""
NODES = [ox.NamedNode(f"{EX}n{k}") for k in range(3)]
PREDICATES = [ox.NamedNode(f"{EX}p"), ox.NamedNode(f"{EX}q")]

# Steps: insert a triple of the small pool as the next copy, or expire the copy inserted k steps
# ago (ignored when there is none, or it left already); an evaluation after every few steps.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.sampled_from(NODES), st.sampled_from(PREDICATES), st.sampled_from(NODES)),
        st.tuples(st.just("expire"), st.integers(0, 8)),
        st.just(("evaluate",)),
    ),
    max_size=40,
)


def evaluator_of(dictionary) -> IncrementalEvaluator:
    algebra, _r2s_kind, patterns = Engine()._prepare(Engine().translate(QUERY), None)
    return IncrementalEvaluator(algebra, patterns, None, dictionary)


@settings(max_examples=200, deadline=None)
@given(steps=steps)
def test_window_entry_makes_the_twins_calls(steps):
    compiled_dictionary = _dictionary.TermDictionary()
    compiled = evaluator_of(compiled_dictionary)
    assert isinstance(compiled.on_insert.__self__, WindowEntry)  # the compiled entry is the one in use
    twin_dictionary = _dictionary.TermDictionary()
    twin = evaluator_of(twin_dictionary)
    twin_insert, twin_expire = IncrementalEvaluator.on_insert.__get__(twin), IncrementalEvaluator.on_expire.__get__(twin)
    inserted: list[tuple[int, int]] = []  # (pattern id, seq) per insert, in order
    live: set[int] = set()
    tau = 0
    for step in steps:
        if step[0] == "insert":
            triple = ox.Triple(*step[1:])
            pattern = PREDICATES.index(step[2])
            seq = len(inserted)
            for dictionary, insert in ((compiled_dictionary, compiled.on_insert), (twin_dictionary, twin_insert)):
                ids = tuple(dictionary.encode_triples([triple]))
                insert(pattern, ids, tau, seq)
                dictionary.decref_many(ids)  # the event's own references, as the engine drops them
            inserted.append((pattern, seq))
            live.add(seq)
        elif step[0] == "expire":
            if step[1] < len(inserted) and inserted[-1 - step[1]][1] in live:
                pattern, seq = inserted[-1 - step[1]]
                compiled.on_expire(pattern, seq)
                twin_expire(pattern, seq)
                live.discard(seq)
        else:
            tau += 1
            assert _bag(compiled.evaluate(tau)) == _bag(twin.evaluate(tau))
    tau += 1
    assert _bag(compiled.evaluate(tau)) == _bag(twin.evaluate(tau))
    for node in NODES + PREDICATES:
        assert _refs(compiled_dictionary, node) == _refs(twin_dictionary, node)


def _bag(changes):
    return sorted((sorted((k, str(v)) for k, v in row.items()), sign) for row, sign in changes)


def _refs(dictionary, term) -> int:
    term_id = dictionary.lookup(term)
    return 0 if term_id is None else dictionary.refcount(term_id)


rows = st.lists(st.lists(st.none() | terms, min_size=2, max_size=4).map(tuple), max_size=10)


@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
@settings(max_examples=200)
@given(snapshots=st.lists(rows, min_size=1, max_size=4))
def test_compiled_row_decoder_decodes_as_the_twin(new_dictionary, snapshots):
    dictionary = new_dictionary()
    compiled, twin = _r2s.RowDecoder(dictionary, SCHEMA), RowDecoderPython(dictionary, SCHEMA)
    for drawn in snapshots:
        id_rows = [tuple(None if term is None else dictionary.encode(term) for term in row) for row in drawn]
        assert compiled.decode_all(id_rows) == twin.decode_all(id_rows)
        # A snapshot shares the mapping of a row it listed before (and of a bag's duplicate).
        decoded, expected = compiled.snapshot(id_rows), twin.snapshot(id_rows)
        assert decoded == expected
        for (i, row), mapping in zip(enumerate(id_rows), decoded):
            first = id_rows.index(row)
            assert mapping is decoded[first], i


@settings(max_examples=200)
@given(drawn=st.lists(st.lists(st.none() | st.sampled_from(NODES + PREDICATES) | st.integers(-5, 5).map(ox.Literal), min_size=1, max_size=4), max_size=12))
def test_release_rows_drops_what_the_twin_drops(drawn):
    counts = []
    for release in (release_rows, release_rows_python):
        dictionary = _dictionary.TermDictionary()
        rows = [tuple(None if term is None else dictionary.encode(term) for term in row) for row in drawn]
        for row in rows:  # a second reference per id, so that releasing one leaves the entry
            dictionary.incref_many([value for value in row if value is not None])
        release(dictionary, rows)
        counts.append([_refs(dictionary, term) for term in NODES + PREDICATES])
    assert counts[0] == counts[1]


@settings(max_examples=200)
@given(deltas=st.lists(st.tuples(st.tuples(st.integers(0, 4), st.integers(0, 2)), st.sampled_from([1, -1])), max_size=30))
def test_compiled_sink_lists_gamma_as_the_twin(deltas):
    compiled, twin = _sink.Sink(("a", "b")), PythonSink(("a", "b"))
    for sink in (compiled, twin):
        sink.on_batch(0, [Delta(row, sign, ()) for row, sign in deltas])
    assert compiled.relation == twin.relation
    assert compiled.rows() == twin.rows()
