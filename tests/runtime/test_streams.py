"""Events as term ids: plain N-Triples text is read without pyoxigraph and gives the same terms,
malformed text is refused whole with its line, and every reference an event takes is given back."""

import pyoxigraph as ox
import pytest

from cqels_endpoint import Engine
from cqels_endpoint.errors import RdfSyntaxError
from cqels_endpoint.runtime.compiled import use_pure_python
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.streams import event_triples, to_triples

STREAM = "http://ex.org/stream"
TEXT = (
    '<http://ex.org/a> <http://ex.org/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
    '<http://ex.org/a> <http://ex.org/q> "x"@EN .\n'
    "_:b <http://ex.org/p> <http://ex.org/c> .\n"
)


def test_plain_text_and_parsed_triples_encode_alike():
    dictionary = TermDictionary()
    read = event_triples(TEXT)
    assert isinstance(read, tuple) is use_pure_python()  # compiled: TripleForms, no pyoxigraph object
    parsed = to_triples(TEXT)
    assert dictionary.encode_triples(read).tolist() == dictionary.encode_triples(parsed).tolist()
    assert event_triples(list(parsed)) == list(parsed)  # pyoxigraph triples go to the dictionary as they are


def test_text_the_reader_leaves_is_parsed_by_pyoxigraph():
    turtle = "@prefix ex: <http://ex.org/> .\nex:a ex:p 1, 2 ."
    assert event_triples(turtle) == to_triples(turtle)


@pytest.mark.parametrize("text", [TEXT + "<http://ex.org/a> <http://ex.org/p> .\n", "<http://ex.org/a> <p> <http://ex.org/b> ."])
def test_malformed_text_is_refused_whole_with_its_line(text):
    engine = Engine()
    query = engine.register(f"SELECT * WHERE {{ STREAM <{STREAM}> [RANGE 10ms] {{ ?s ?p ?o }} }}", r2s="RSTREAM")
    seen = []
    query.subscribe(seen.append)
    with pytest.raises(RdfSyntaxError) as raised:
        engine.push_batch(STREAM, [(TEXT, 1), (text, 2)])
    assert raised.value.line == text.count("\n", 0, text.rindex("<http://ex.org/a>")) + 1
    assert seen == [] and engine.stream_stats() == []  # nothing of the batch was applied
    assert len(engine.dictionary) == 0


@pytest.mark.parametrize("mode", ["incremental", "recompute"])
def test_every_reference_an_event_takes_is_given_back(mode):
    engine = Engine()
    query = engine.register(
        f"SELECT ?s ?o WHERE {{ STREAM <{STREAM}> [RANGE 10ms] {{ ?s <http://ex.org/p> ?o }} }}",
        mode=mode,
        r2s="RSTREAM",
    )
    seen = []
    query.subscribe(seen.append)
    engine.push(STREAM, TEXT, time=1)
    engine.push(STREAM, TEXT, time=2)  # the same triples again: the window is a set
    engine.push(STREAM, [ox.Triple(ox.NamedNode("http://ex.org/z"), ox.NamedNode("http://ex.org/p"), ox.Literal("z"))], time=3)
    assert [len(emission.rows) for emission in seen] == [2, 2, 3]
    engine.advance(20)
    engine.advance(21)  # the references of the rows that left go after the evaluation that reported them
    assert seen[-1].rows == []
    # Only the pattern's predicate is left, held by the query's router and by the engine's fan-out
    # index (engine.fanout), one reference each.
    predicate = engine.dictionary.lookup(ox.NamedNode("http://ex.org/p"))
    assert len(engine.dictionary) == 1 and engine.dictionary.refcount(predicate) == 2
    engine.unregister(query.name)
    assert len(engine.dictionary) == 0
