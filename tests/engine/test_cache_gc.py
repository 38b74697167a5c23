"""Static caches stay out of the cyclic garbage collector (``runtime.untracked``), and are still freed.

A full collection walks every tracked object with the GIL held: a cache of a million tracked rows
of terms paused every push for most of a second. Its rows, their terms, the operator's leaf ids
and the dictionary's decoded terms must not be tracked; and since the collector no longer sees
them, a replaced cache must be freed by reference counting alone.
"""

from __future__ import annotations

import gc
import sys
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import given
from hypothesis import strategies as st
from incremental_oracle import static_store

from cqels_endpoint import Engine
from cqels_endpoint.caches.engines import RowChunks, compute_cache
from cqels_endpoint.operators import MultiwayJoin, Sink
from cqels_endpoint.operators.static_cache import LeafIds
from cqels_endpoint.operators.static_cache import StaticCache as StaticCacheOperator
from cqels_endpoint.runtime.compiled import use_pure_python
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.untracked import untrack_row, untrack_term

EX = "http://ex.org/"
S = EX + "s"
PREFIX = f"PREFIX : <{EX}>\n"
# One cache, of rows with every kind of term and an unbound column (OPTIONAL in its group).
QUERY = PREFIX + (
    f"SELECT * WHERE {{ STREAM <{S}> [RANGE 1000ms] {{ ?a :p ?b }} "
    "{ ?b :r ?d . OPTIONAL { ?b :q ?e } } }"
)
NT = "application/n-triples"
TERMS = (ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple)

compiled_only = pytest.mark.skipif(use_pure_python(), reason="pure Python cannot untrack an object")


def static_data(rows: int, value: str) -> str:
    """``rows`` cache rows whose ``?d`` is an IRI, a literal or a blank node in turn (the store
    reads no triple terms: ``test_untrack_row_takes_only_rows_of_terms_out`` has them)."""
    objects = (
        lambda i: f"<{EX}{value}{i}>",
        lambda i: f'"{value} {i}"@en',
        lambda i: f"_:{value}{i}",
    )
    lines = [f"<{EX}b{i}> <{EX}r> {objects[i % 3](i)} .\n" for i in range(rows)]
    lines += [f'<{EX}b{i}> <{EX}q> "{i}" .\n' for i in range(0, rows, 2)]
    return "".join(lines)


def tracked_terms() -> int:
    return sum(1 for o in gc.get_objects() if type(o) in TERMS)


def content(engine: Engine, name: str) -> list[tuple]:
    """The rows (of terms) the rebuild manager keeps for the next diff of the query's one cache."""
    [state] = engine.caches._queries[name].caches
    return state.content


@compiled_only
def test_untrack_row_takes_only_rows_of_terms_out() -> None:
    iri, literal, blank = ox.NamedNode(EX + "a"), ox.Literal("1"), ox.BlankNode()
    triple = ox.Triple(iri, iri, literal)
    row = untrack_row((iri, None, literal, blank, triple))
    assert not gc.is_tracked(row) and not any(gc.is_tracked(term) for term in row)
    assert row == (ox.NamedNode(EX + "a"), None, ox.Literal("1"), blank, triple)
    # Anything but terms and None in it, and the row and its terms stay as they were.
    other_iri = ox.NamedNode(EX + "b")
    mixed = untrack_row((other_iri, [1]))
    assert gc.is_tracked(mixed) and gc.is_tracked(other_iri)
    listed = [ox.NamedNode(EX + "c")]
    assert untrack_row(listed) is listed and gc.is_tracked(listed[0])
    term = ox.Literal("x")
    assert untrack_term(term) is term and not gc.is_tracked(term)
    assert untrack_term([1]) == [1]


def registered(rows: int) -> tuple[Engine, object, int]:
    """An engine with the query over ``rows`` cache rows, after one push; and how many more objects
    the collector tracks than before it was made."""
    gc.collect()
    before = len(gc.get_objects())
    engine = Engine(store=static_store(static_data(rows, "d")), rebuild_debounce_ms=0)
    query = engine.register(QUERY, name="q")
    engine.push(S, f"<{EX}a> <{EX}p> <{EX}b1> .", time=1)
    gc.collect()
    return engine, query, len(gc.get_objects()) - before


@compiled_only
def test_a_built_cache_adds_no_tracked_object_per_row() -> None:
    small, _, _ = registered(40)  # the first engine also imports what any engine needs
    small.close()
    small, _, grown_small = registered(40)
    rows = 4000
    terms_before = tracked_terms()  # earlier tests of the process may keep terms of their own
    engine, query, grown = registered(rows)
    # Per row, the cache held a tuple of terms and its terms (2 to 4 tracked objects) and a list of
    # leaf ids: now none.
    assert grown - grown_small < rows / 20
    assert tracked_terms() - terms_before < rows / 20
    [(node, _operator)] = query.evaluator.caches
    built = compute_cache(node, engine.store)
    assert len(built) == rows and not any(gc.is_tracked(row) for row in built)
    assert not any(gc.is_tracked(chunk) for chunk in built._chunks)
    assert not any(gc.is_tracked(term) for row in built for term in row)
    assert not any(gc.is_tracked(row) for row in content(engine, "q"))
    assert [(row["d"], row.get("e")) for row in query.snapshot()] == [(ox.Literal("d 1", language="en"), None)]
    small.close()
    engine.close()


@compiled_only
def test_decoded_terms_kept_by_the_dictionary_are_untracked() -> None:
    dictionary = TermDictionary()
    iri = dictionary.encode(ox.NamedNode(EX + "a"))
    term = dictionary.decode(iri)
    memoised = dictionary.decode(iri) is term
    references = sys.getrefcount(term)
    dictionary.decref(iri)  # the entry goes, and the memo's reference with it
    after = sys.getrefcount(term)
    assert memoised and term == ox.NamedNode(EX + "a") and after == references - 1
    ids = [dictionary.encode(t) for t in (ox.NamedNode(EX + "a"), ox.Literal("x", language="en"), ox.BlankNode("b"))]
    decoded = [dictionary.decode(term_id) for term_id in ids]
    assert decoded == [ox.NamedNode(EX + "a"), ox.Literal("x", language="en"), ox.BlankNode("b")]
    assert [gc.is_tracked(term) for term in decoded] == [False, False, False]


def test_a_replaced_cache_is_freed_without_the_collector() -> None:
    rows = 2000
    store = static_store(static_data(rows, "old"))
    engine = Engine(store=store, rebuild_debounce_ms=0, cache_install_rows=300)
    query = engine.register(QUERY, name="q")
    old_row = content(engine, "q")[0]
    assert sys.getrefcount(old_row) > 2
    gc.collect()
    gc.disable()  # only reference counting may free the old cache from here on
    try:
        store.put_graph(None, static_data(rows, "new"), NT)
        assert engine.wait_for_caches(60)
        engine.push(S, f"<{EX}a> <{EX}p> <{EX}b0> .", time=1)
        engine.push(S, f"<{EX}a> <{EX}p> <{EX}b1> .", time=2)  # the tick after the -1 rows hands them back
        # Nothing but this test refers to a row of the old build any more.
        assert sys.getrefcount(old_row) == 2
    finally:
        gc.enable()
    assert {str(row["d"]) for row in query.snapshot()} == {f"<{EX}new0>", '"new 1"@en'}
    engine.close()
    assert len(engine.dictionary) == 0


def test_a_build_two_caches_share_is_freed_only_after_both_are_replaced() -> None:
    rows = 500
    store = static_store(static_data(rows, "old"))
    engine = Engine(store=store, rebuild_debounce_ms=0)
    # Identical caches registered at one store version share one build (caches.rebuild).
    first, second = engine.register(QUERY, name="first"), engine.register(QUERY, name="second")
    oracle = engine.register(QUERY, name="oracle", mode="recompute")
    assert content(engine, "first") is content(engine, "second")
    for step in range(3):
        store.put_graph(None, static_data(rows - 100 * step, f"v{step}"), NT)
        assert engine.wait_for_caches(60)
        engine.push(S, f"<{EX}a{step}> <{EX}p> <{EX}b{step}> .", time=step)
        engine.push(S, f"<{EX}c{step}> <{EX}p> <{EX}b{rows}> .", time=step)
        expected = Counter(map(frozenset, (row.items() for row in oracle.snapshot())))
        assert len(expected) == step + 1
        for query in (first, second):
            assert Counter(map(frozenset, (row.items() for row in query.snapshot()))) == expected
            assert len(content(engine, query.name)) == rows - 100 * step
    engine.close()


leaf_operations = st.lists(
    st.tuples(st.sampled_from(["add", "pop", "remove"]), st.integers(0, 3), st.integers(0, 5)), max_size=40
)


@given(operations=leaf_operations)
def test_leaf_ids_behave_as_a_list_of_ids_per_row(operations: list) -> None:
    leaf_ids, model = LeafIds(), {}
    next_leaf = -1
    for operation, key, pick in operations:
        row = (key,)
        held = model.get(row, [])
        if operation == "add":
            leaf_ids.add(row, next_leaf)
            model.setdefault(row, []).append(next_leaf)
            next_leaf -= 1
        elif operation == "pop" and held:
            assert leaf_ids.pop(row) == held.pop()
        elif operation == "remove" and held:
            leaf = held[pick % len(held)]
            leaf_ids.remove(row, leaf)
            held.remove(leaf)
        model = {r: ids for r, ids in model.items() if ids}
        assert dict(leaf_ids.items()) == model
        assert list(leaf_ids.items()) == list(model.items())
        assert len(leaf_ids) == sum(map(len, model.values()))
        assert all(((k,) in leaf_ids) == ((k,) in model) for k in range(4))


@given(
    rows=st.lists(st.tuples(st.integers(0, 9)), max_size=40),
    size=st.integers(1, 7),
    start=st.integers(-45, 45) | st.none(),
    stop=st.integers(-45, 45) | st.none(),
    step=st.sampled_from([None, 1, 2, -1]),
)
def test_row_chunks_read_as_the_list_they_were_made_from(rows: list, size: int, start, stop, step) -> None:
    chunks = RowChunks(rows, size)
    assert len(chunks) == len(rows) and list(chunks) == rows
    assert chunks[start:stop:step] == rows[start:stop:step]
    for index in (start, stop):
        if index is not None and -len(rows) <= index < len(rows):
            assert chunks[index] == rows[index]
        elif index is not None:
            with pytest.raises(IndexError):
                chunks[index]
    chunks.release()
    assert len(chunks) == 0 and list(chunks) == []


@compiled_only
def test_kept_rows_add_nothing_to_a_full_collection() -> None:
    # Untracked as they are made: left to CPython, the first young collection, on any thread,
    # would walk their rows.
    rows = RowChunks((untrack_row((ox.NamedNode(f"{EX}{i}"), None)) for i in range(25_000)), 10_000)
    assert [len(chunk) for chunk in rows._chunks] == [10_000, 10_000, 5_000]
    assert not any(gc.is_tracked(chunk) for chunk in rows._chunks)
    # A chunk with a tracked row in it stays tracked.
    mixed = RowChunks([untrack_row((ox.NamedNode(EX + "a"),)), (ox.NamedNode(EX + "b"),)], 10_000)
    assert [gc.is_tracked(chunk) for chunk in mixed._chunks] == [True]


@compiled_only
@pytest.mark.parametrize("below", ["sink", "join"])
def test_a_staged_change_adds_no_tracked_object_per_row(below: str) -> None:
    # Below a join the change goes into the join's tables as it is staged; below another operator
    # it waits in the cache as batches.
    rows = 4000
    cache = StaticCacheOperator(("a", "b"))
    if below == "join":
        join = MultiwayJoin([("a",), ("a", "b")])
        join.connect(Sink(join.schema))
        cache.connect(join, 1)
    else:
        cache.connect(Sink(("a", "b")))
    gc.collect()
    before = len(gc.get_objects())
    for start in range(0, rows, 1000):
        cache.stage([(i, i + 1) for i in range(start, start + 1000)], [])
    cache.release_staged()
    gc.collect()  # CPython untracks tuples of ints (a Delta, a tuple subclass, it would not)
    assert len(gc.get_objects()) - before < rows / 20
    cache.on_punctuation(1)
    assert len(cache) == rows
