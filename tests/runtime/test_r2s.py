"""The compiled R2S writers (``runtime/_r2s.pyx``) write the text of their twins
(``engine.emission.BindingsWriterPython``, ``TemplateWriterPython``) for the same rows of ids."""

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.engine.emission import PRUNE_FLOOR, BindingsWriterPython, TemplateWriterPython
from cqels_endpoint.runtime import _dictionary, _r2s
from cqels_endpoint.runtime.encoding import TermDictionaryPython
from tests.engine.test_emission_json import SCHEMA, canonical_blank_nodes, templates
from tests.runtime.test_encoding import terms, triple_terms

# Rows as wide as the schema, narrower (a short row binds its first columns) or wider (extra ids unread).
rows = st.lists(st.lists(st.none() | terms | triple_terms, min_size=2, max_size=4).map(tuple), max_size=10)


def encoded(dictionary, drawn):
    return [tuple(None if term is None else dictionary.encode(term) for term in row) for row in drawn]


@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
@settings(max_examples=300)
@given(drawn=rows, capacity=st.sampled_from([1, 3, 1 << 16]))
def test_compiled_bindings_writer_writes_the_twins_text(new_dictionary, drawn, capacity):
    dictionary = new_dictionary()
    compiled = _r2s.BindingsWriter(dictionary, SCHEMA, capacity=capacity)
    twin = BindingsWriterPython(dictionary, SCHEMA, capacity=capacity)
    id_rows = encoded(dictionary, drawn)
    for _ in range(2):  # the second pass reads the kept texts (or refills a cache smaller than the rows)
        assert compiled.write(id_rows) == twin.write(id_rows)


@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
@settings(max_examples=300)
@given(template=templates, drawn=st.lists(st.tuples(*[st.none() | terms | triple_terms] * 3), max_size=8), capacity=st.sampled_from([1, 1 << 16]))
def test_compiled_template_writer_writes_the_twins_triples(new_dictionary, template, drawn, capacity):
    dictionary = new_dictionary()
    compiled = _r2s.TemplateWriter(dictionary, SCHEMA, template, capacity=capacity)
    twin = TemplateWriterPython(dictionary, SCHEMA, template, capacity=capacity)
    id_rows = encoded(dictionary, drawn)
    for _ in range(2):
        assert canonical_blank_nodes(compiled.write(id_rows)) == canonical_blank_nodes(twin.write(id_rows))


@pytest.mark.parametrize("new_writer", [_r2s.BindingsWriter, BindingsWriterPython], ids=["compiled", "twin"])
@pytest.mark.parametrize("new_dictionary", [_dictionary.TermDictionary, TermDictionaryPython], ids=["compiled", "python"])
def test_kept_texts_are_bounded_by_the_live_ids(new_writer, new_dictionary):
    # ISTREAM over a sliding window: every row brings a new subject, written once, whose entry the
    # dictionary releases when it leaves the window. The texts kept follow the live ids, not the
    # ids ever written (the writer's capacity, 65,536, took 44 minutes of load to reach).
    dictionary = new_dictionary()
    writer = new_writer(dictionary, SCHEMA)
    value = dictionary.encode(ox.NamedNode("http://example.org/hot"))
    live, held = 1000, []
    for k in range(30_000):
        subject = dictionary.encode(ox.NamedNode(f"http://example.org/e{k}"))
        held.append(subject)
        if len(held) > live:
            dictionary.decref(held.pop(0))
        text = writer.write([(subject, value, dictionary.encode(ox.Literal(k)))])  # an inline id a value
        assert f'"http://example.org/e{k}"' in text and f'"{k}"' in text
        assert len(writer._texts) <= max(PRUNE_FLOOR, 2 * (live + 1)) + 1
