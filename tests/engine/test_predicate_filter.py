"""The per-stream predicate filter (``FanOut.kept_predicates``, ``Streams.push_batch``): the triples of
an event that no registered pattern on its stream can match are never encoded, and no answer, clock
or evaluation count changes — against the same run with the filter off, in incremental and
recompute mode, under random registrations, unregistrations, out-of-order events held by a
lateness, advances and clock resets, with events full of predicates no query reads."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqels_endpoint import Engine

EX = "http://ex.org/"
S1, S2 = f"{EX}s1", f"{EX}s2"

# The queries read p0–p2 (p3–p5 only through a variable predicate or a stream-wide count); each
# shape is one case the filter treats apart: (text, r2s, dialect).
SHAPES = [
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "ISTREAM", None),
    (f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 30ms] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", None),
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [NOW] {{ ?s <{EX}p1> ?o }} }}", "RSTREAM", None),
    (f"SELECT ?o WHERE {{ STREAM <{S2}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", None),
    (f"SELECT ?o WHERE {{ STREAM <{S2}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "DSTREAM", "cqels2"),  # stream-wide
    (f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 30ms SLIDE 10ms] {{ ?s <{EX}p2> ?o }} }}", "RSTREAM", None),
    (f"SELECT (COUNT(*) AS ?n) WHERE {{ STREAM <{S1}> [RANGE 25ms] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM", None),
    (f"SELECT ?a ?c WHERE {{ STREAM <{S1}> [RANGE 40ms] {{ ?a <{EX}p0> ?b }} STREAM <{S2}> [RANGE 15ms] {{ ?c <{EX}p1> ?b }} }}",
     "ISTREAM", None),
    (f"SELECT ?s ?p WHERE {{ STREAM <{S2}> [RANGE 20ms] {{ ?s ?p 1 }} }}", "ISTREAM", None),  # variable predicate
    (f"SELECT ?st ?s WHERE {{ STREAM ?st [RANGE 20ms] {{ ?s <{EX}p1> ?o }} }}", "ISTREAM", None),  # every stream
]

STEPS = {
    "push": st.tuples(
        st.just("push"), st.sampled_from([S1, S2]), st.integers(-6, 12),
        st.lists(st.tuples(st.integers(0, 9), st.integers(0, 5), st.integers(0, 2)), min_size=1, max_size=5),
    ),
    "register": st.tuples(st.just("register"), st.integers(0, len(SHAPES) - 1)),
    "advance": st.tuples(st.just("advance"), st.integers(0, 40)),
    "unregister": st.tuples(st.just("unregister"), st.integers(0, 20)),
    "reset": st.tuples(st.just("reset"), st.sampled_from([S1, S2])),
}
# Mostly pushes and registrations: a registration between an event's arrival and its release (a
# lateness holds it) is a case to see.
steps = st.lists(
    st.sampled_from(["push", "push", "push", "register", "register", "advance", "unregister", "reset"]).flatmap(STEPS.__getitem__),
    min_size=4,
    max_size=40,
)


def run(filtering: bool, mode: str, lateness: int, shapes: list[int], program: list[tuple]) -> tuple[list, list]:
    """The emissions of every query, and each one's clock and evaluations after every step."""
    engine = Engine(lateness_ms=lateness)
    engine.fanout.filtering = filtering
    emissions: list = []
    states: list = []
    names: list[str] = []
    latest = {S1: None, S2: None}

    def register(shape: int) -> None:
        text, r2s, dialect = SHAPES[shape]
        query = engine.register(text, r2s=r2s, mode=mode, dialect=dialect)
        query.subscribe(lambda e, name=query.name: emissions.append(
            (name, e.time, sorted(sorted((k, str(v)) for k, v in r.items()) for r in e.rows))))
        names.append(query.name)

    for shape in shapes:
        register(shape)
    for step in program:
        if step[0] == "push":
            _, stream, gap, triples = step
            # Up to the lateness back from the stream's latest time: held, then released in order.
            time = max(0, (latest[stream] or 0) + (gap if gap >= 0 else max(gap, -lateness)))
            latest[stream] = max(latest[stream] or 0, time)
            data = "\n".join(f"<{EX}e{s}> <{EX}p{p}> {o} ." for s, p, o in triples)
            engine.push(stream, data, time=time)
        elif step[0] == "advance":
            at = max(value or 0 for value in latest.values()) + step[1]
            engine.advance(at)
            latest = {S1: at, S2: at}
        elif step[0] == "register":
            register(step[1])
        elif step[0] == "unregister" and names:
            engine.unregister(names.pop(step[1] % len(names)))
        elif step[0] == "reset" and step[1] in engine.streams.clocks:
            engine.reset_clock(step[1])
            latest[step[1]] = None
        states.append([(name, engine.queries[name].clock, engine.queries[name].evaluations) for name in names])
    engine.close()
    return emissions, states


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.integers(0, len(SHAPES) - 1), max_size=4), program=steps,
       lateness=st.sampled_from([0, 5]))
def test_filtering_changes_no_answer_clock_or_evaluation_count(shapes, program, lateness) -> None:
    incremental = run(True, "incremental", lateness, shapes, program)
    assert incremental == run(False, "incremental", lateness, shapes, program)
    recompute = run(True, "recompute", lateness, shapes, program)
    assert recompute == run(False, "recompute", lateness, shapes, program)
    assert incremental[0] == recompute[0]


def test_triples_no_pattern_reads_are_never_encoded() -> None:
    engine = Engine()
    query = engine.register(f"SELECT ?s ?o WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}")
    rows: list = []
    query.subscribe(lambda e: rows.extend((str(r["s"]), str(r["o"])) for r in e.rows))
    before = len(engine.dictionary)
    engine.push(S1, f'<{EX}a> <{EX}p9> "never read" .\n<{EX}a> <{EX}p0> <{EX}b> .', time=1)
    # a, p0 and b (p0 was held already): nothing of the p9 triple, neither the predicate nor its object
    assert len(engine.dictionary) == before + 2
    assert engine.dictionary.lookup(_iri("p9")) is None
    engine.push(S2, f'<{EX}a> <{EX}p0> "a stream no query reads" .', time=1)
    assert len(engine.dictionary) == before + 2
    assert rows == [(f"<{EX}a>", f"<{EX}b>")]
    engine.close()


def test_a_registration_changes_the_filter_at_once() -> None:
    engine = Engine()
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}", name="first")
    engine.push(S1, f"<{EX}a> <{EX}p1> 1 .", time=1)  # p1: read by no query yet
    assert engine.fanout.kept_predicates(S1) == {engine.dictionary.lookup(_iri("p0"))}
    later = engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p1> ?o }} }}", name="later")
    seen: list = []
    later.subscribe(lambda e: seen.extend(str(r["s"]) for r in e.rows))
    engine.push(S1, f"<{EX}b> <{EX}p1> 1 .", time=2)
    assert seen == [f"<{EX}b>"]
    engine.unregister("later")
    assert engine.fanout.kept_predicates(S1) == {engine.dictionary.lookup(_iri("p0"))}
    engine.close()


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        (f"SELECT ?s ?p WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s ?p 1 }} }}", None),
        (f"SELECT ?o WHERE {{ STREAM <{S1}> [TRIPLES 2] {{ ?s <{EX}p0> ?o }} }}", "cqels2"),
        ("SELECT ?st WHERE { STREAM ?st [RANGE 1h] { ?s ?p ?o } }", None),
    ],
    ids=["variable predicate", "stream-wide count", "STREAM ?var, variable predicate"],
)
def test_every_triple_is_kept_where_a_query_may_read_it(text, dialect) -> None:
    engine = Engine()
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}")
    engine.register(text, dialect=dialect)
    assert engine.fanout.kept_predicates(S1) is None
    engine.close()


def test_a_stream_variable_query_keeps_its_predicates_on_every_stream() -> None:
    engine = Engine()
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}")
    variable = engine.register(f"SELECT ?st ?s WHERE {{ STREAM ?st [RANGE 1h] {{ ?s <{EX}p1> ?o }} }}")
    seen: list = []
    variable.subscribe(lambda e: seen.extend((str(r["st"]), str(r["s"])) for r in e.rows))
    other = f"{EX}other"
    engine.push(other, f"<{EX}a> <{EX}p2> 1 . <{EX}b> <{EX}p1> 2 .", time=1)
    assert engine.fanout.kept_predicates(S1) == {engine.dictionary.lookup(_iri("p0")), engine.dictionary.lookup(_iri("p1"))}
    assert engine.fanout.kept_predicates(other) == {engine.dictionary.lookup(_iri("p1"))}
    assert seen == [(f"<{other}>", f"<{EX}b>")]
    engine.unregister(variable.name)
    assert engine.fanout.kept_predicates(S1) == {engine.dictionary.lookup(_iri("p0"))}
    assert engine.dictionary.lookup(_iri("p1")) is None  # the removed query's predicate was given back
    engine.close()


def test_an_event_held_by_the_lateness_keeps_every_triple_for_a_query_registered_meanwhile() -> None:
    engine = Engine(lateness_ms=10)
    engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p0> ?o }} }}")
    engine.push(S1, f"<{EX}a> <{EX}p1> 1 .", time=5)  # held until the watermark passes 5
    later = engine.register(f"SELECT ?s WHERE {{ STREAM <{S1}> [RANGE 1h] {{ ?s <{EX}p1> ?o }} }}")
    seen: list = []
    later.subscribe(lambda e: seen.extend((e.time, str(r["s"])) for r in e.rows))
    engine.advance(20)
    assert seen == [(5, f"<{EX}a>")]
    engine.close()


def _iri(local: str) -> ox.NamedNode:
    return ox.NamedNode(f"{EX}{local}")
