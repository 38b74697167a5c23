"""Differential tests: the incremental engine against re-evaluation, at every evaluation time.

Hypothesis draws a continuous query from BGP / join / FILTER / BIND / projection / CONSTRUCT
shapes over a small vocabulary (STREAM blocks, or a FROM STREAM default graph), windows of every kind (RANGE eager, RANGE … SLIDE, NOW, ALL,
TRIPLES n), a static graph, and a stream history with several streams (one may lag behind the
other), key skew, bursts, equal timestamps (several events of one instant in a ``[NOW]``), long
gaps and clock advances, and the dialect the query reads in (in cqels2 ``[RANGE d]`` is tumbling
and ``[TRIPLES n]`` counts the stream's statements, shared by the patterns reading the stream). A
STREAM block may name its stream by a variable (``STREAM ?st``), free (every stream, a third one
that no block names included) or restricted by the static data (a static pattern or a VALUES
binding ``?st``). The same query is registered in both modes and with all
three R2S on one engine; every emission must be the same (``incremental_oracle``).

A failing example found by Hypothesis is written to ``tests/regressions/incremental/`` when it is
reported (its final, shrunk form) and runs from then on as an explicit case below.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, Scenario, check, check_keeping_failures, emitted, regression_cases

EX = "http://ex.org/"
STREAMS = (EX + "s0", EX + "s1")
# The streams events are pushed on: s2 only a STREAM ?var block reads.
PUSHED = (*STREAMS, EX + "s2")
# How a STREAM block names its stream: by IRI, or by a variable (blocks naming one variable join on it).
STREAM_NAMES = (*(f"<{stream}>" for stream in STREAMS), "?st", "?st", "?su")
ENTITIES = ("e0", "e1", "e2")
NUMBERS = (0, 1, 2, 3)

# Stream triple patterns over the vocabulary: entities linked by :p/:q, numbers attached by :v.
TRIPLE_SHAPES = (
    "?a :p ?b",
    "?b :p ?c",
    "?a :q ?c",
    "?b :q ?d",
    "?a :v ?n",
    "?b :v ?m",
    ":e0 :p ?b",
    "?a :p :e1",
    "?a :p ?a",
    "?a ?pred ?b",
    "_:x :p ?b",
)
STATIC_SHAPES = (
    "?b :s ?c",
    "?c :s ?d",
    "?a :t ?n",
    "GRAPH :g { ?b :u ?d }",
    "GRAPH ?g { ?b :u ?d }",
    "?d :s :e2",
    # Static parts whose mappings may leave a join variable unbound.
    "{ ?b :s ?c OPTIONAL { ?c :s ?d } }",
    "VALUES ?c { :e0 :e1 UNDEF }",
    # Static parts naming the streams a STREAM ?st block reads (static data holds :s0/:s1/:s2 :watch ?a).
    "?st :watch ?a",
    "VALUES ?st { :s0 :s2 }",
    "OPTIONAL { ?st :watch ?b }",
)
FILTERS = (
    "?a != ?b",
    "?n > 1",
    "?n + ?m <= 3",
    "isIRI(?b)",
    "?b = :e1",
    "STR(?a) < STR(?c)",
    "?n * 2 = ?m",
    "BOUND(?z)",
    "?z > 2",
    "!(?c IN (:e0, :e3))",
)
BINDS = (
    "?n * 2",
    "?n + ?m",
    "CONCAT(STR(?a), \"-\", STR(?b))",
    "?n / 0",
    "IF(?n > 1, ?a, ?b)",
    "COALESCE(?m, ?n, 7)",
    "STRLEN(STR(?b))",
)
SELECT_EXPRESSIONS = ("(?n + 1 AS ?w)", "(UCASE(STR(?b)) AS ?w)", "(?n < ?m AS ?w)")
VARIABLES = ("a", "b", "c", "d", "n", "m", "z", "st", "su")
WINDOWS = st.one_of(
    st.sampled_from((30, 10, 5, 3, 1)).map(lambda t: f"[RANGE {t}ms]"),
    st.just("[ALL]"),
    st.tuples(st.sampled_from((2, 4, 6)), st.sampled_from((1, 2))).map(lambda w: f"[RANGE {w[0]}ms SLIDE {w[1]}ms]"),
    st.just("[NOW]"),
    st.just("[ALL]"),
    st.just("[ALL]"),
    st.sampled_from((1, 2, 3)).map(lambda n: f"[TRIPLES {n}]"),
)
# Count windows beside those of every kind: the stream-wide ones of cqels2 share their count
# between the patterns of a stream, which the other windows do not.
COUNTED = st.one_of(st.sampled_from((1, 2, 3, 5)).map(lambda n: f"[TRIPLES {n}]"), WINDOWS)


def _variables(text: str) -> set[str]:
    return set(re.findall(r"\?(\w+)", text))


@st.composite
def queries(draw, windows=WINDOWS) -> str:
    blocks = []
    for number in range(draw(st.sampled_from((1, 2, 1, 2, 3)))):
        stream = draw(st.sampled_from(STREAM_NAMES))
        window = draw(windows)
        shapes = draw(st.lists(st.sampled_from(TRIPLE_SHAPES), min_size=1, max_size=2, unique=True))
        # A blank node label belongs to one basic graph pattern: one label per block.
        shapes = [shape.replace("_:x", f"_:x{number}") for shape in shapes]
        blocks.append(f"STREAM {stream} {window} {{ {' . '.join(shapes)} }}")
    body = list(blocks)
    scope = _variables(" ".join(blocks))
    # Mostly parts that read variables in scope, so that Γ is not empty too often.
    def fits(text: str) -> bool:
        return _variables(text) <= scope

    statics = draw(st.lists(st.sampled_from(STATIC_SHAPES), max_size=draw(st.sampled_from((0, 1, 2))), unique=True))
    body.extend(statics)
    scope |= _variables(" ".join(statics))
    if draw(st.booleans()):
        body.append(f"BIND ({draw(st.sampled_from(BINDS))} AS ?z)")
        scope.add("z")
    candidates = [f for f in FILTERS if fits(f)] if draw(st.sampled_from((True,) * 4 + (False,))) else list(FILTERS)
    if candidates:
        filters = draw(st.lists(st.sampled_from(candidates), max_size=draw(st.sampled_from((0, 1, 2))), unique=True))
        body.extend(f"FILTER ({f})" for f in filters)
    where = "WHERE {\n  " + " .\n  ".join(body) + "\n}"
    form = draw(st.sampled_from(("star", "vars", "expression", "construct")))
    if form == "star":
        head = "SELECT *"
    elif form == "vars":
        choices = sorted(scope) or list(VARIABLES)
        head = "SELECT " + " ".join("?" + v for v in draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3, unique=True)))
    elif form == "expression":
        head = f"SELECT ?a ?b {draw(st.sampled_from(SELECT_EXPRESSIONS))}"
    else:
        head = "CONSTRUCT { ?a :out ?b . ?b :val ?n }"
    return f"PREFIX : <{EX}>\n{head}\n{where}"


@st.composite
def dataset_queries(draw, windows=WINDOWS) -> str:
    """A query whose default graph is one stream window (``FROM STREAM``); static data only via GRAPH."""
    stream = draw(st.sampled_from(STREAMS))
    window = draw(windows)
    shapes = draw(st.lists(st.sampled_from(TRIPLE_SHAPES), min_size=1, max_size=3, unique=True))
    body = list(shapes)
    if draw(st.booleans()):
        body.append(draw(st.sampled_from(("GRAPH :g { ?b :u ?d }", "GRAPH ?g { ?b :u ?d }"))))
    scope = _variables(" ".join(body))
    filters = [f for f in FILTERS if _variables(f) <= scope]
    if filters and draw(st.booleans()):
        body.append(f"FILTER ({draw(st.sampled_from(filters))})")
    if draw(st.booleans()):
        body.append(f"BIND ({draw(st.sampled_from(BINDS))} AS ?z)")
    return f"PREFIX : <{EX}>\nSELECT *\nFROM STREAM <{stream}> {window}\nWHERE {{\n  " + " .\n  ".join(body) + "\n}"


def _term(name: str) -> str:
    return f"<{EX}{name}>"


@st.composite
def stream_triples(draw) -> str:
    # Key skew: e0 is drawn far more often than the others.
    entity = st.sampled_from(ENTITIES[:1] * 4 + ENTITIES)
    kind = draw(st.sampled_from(("p", "p", "q", "v")))
    subject = _term(draw(entity))
    if kind == "v":
        return f'{subject} {_term("v")} "{draw(st.sampled_from(NUMBERS))}"^^<http://www.w3.org/2001/XMLSchema#integer> .'
    return f"{subject} {_term(kind)} {_term(draw(entity))} ."


@st.composite
def histories(draw) -> list[list]:
    """Events with per-stream clocks: each stream's timestamps never decrease, but one stream may
    lag behind the other (the engine then evaluates at the query's current time)."""
    events: list[list] = []
    clocks = dict.fromkeys(PUSHED, 0)
    for _ in range(draw(st.integers(1, 20))):
        stream = draw(st.sampled_from(STREAMS[:1] * 2 + PUSHED))
        # Equal timestamps, small steps and long gaps; usually the stream catches up first.
        step = draw(st.sampled_from((0, 0, 1, 1, 2, 3, 7, 25)))
        base = max(clocks.values()) if draw(st.sampled_from((True,) * 4 + (False,))) else clocks[stream]
        clocks[stream] = max(clocks[stream], base) + step
        if draw(st.sampled_from(("push",) * 5 + ("advance",))) == "advance":
            # A clock advance moves every stream's watermark: none may go back behind it.
            events.append(["advance", clocks[stream]])
            clocks = {name: max(clock, clocks[stream]) for name, clock in clocks.items()}
            continue
        burst = draw(st.lists(stream_triples(), min_size=1, max_size=draw(st.sampled_from((1, 3, 6)))))
        events.append(["push", stream, clocks[stream], "\n".join(burst)])
    if draw(st.booleans()):
        events.append(["advance", max(clocks.values()) + draw(st.sampled_from((1, 5, 30)))])
    return events


@st.composite
def static_graphs(draw) -> str:
    quads = []
    for _ in range(draw(st.integers(0, 15))):
        predicate = draw(st.sampled_from(("s", "t", "u", "watch")))
        subject = _term(draw(st.sampled_from(ENTITIES)))
        if predicate == "watch":
            subject = f"<{draw(st.sampled_from(PUSHED))}>"
            obj = _term(draw(st.sampled_from(ENTITIES)))
        elif predicate == "t":
            obj = f'"{draw(st.sampled_from(NUMBERS))}"^^<http://www.w3.org/2001/XMLSchema#integer>'
        else:
            obj = _term(draw(st.sampled_from(ENTITIES)))
        graph = f" {_term('g')}" if predicate == "u" else ""
        quads.append(f"{subject} {_term(predicate)} {obj}{graph} .")
    return "\n".join(quads)


@settings(ORACLE_SETTINGS, max_examples=300)
@given(
    query=st.one_of(queries(), dataset_queries()), static=static_graphs(), events=histories(),
    dialect=st.sampled_from(("auto", "auto", "cqels2")),
)
def test_incremental_equals_recompute(query: str, static: str, events: list[list], dialect: str) -> None:
    logs = check_keeping_failures(Scenario(query, static, events, dialect=dialect))
    event("Γ gained rows" if emitted(logs, "ISTREAM") else "Γ stayed empty")


@settings(ORACLE_SETTINGS, max_examples=150)
@given(query=st.one_of(queries(COUNTED), dataset_queries(COUNTED)), static=static_graphs(), events=histories())
def test_stream_wide_count_windows_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    """CQELS-QL 2.0's ``[TRIPLES n]`` (§3.1): the last n statements of the stream, whatever they
    match, seen by each pattern reading the stream."""
    logs = check_keeping_failures(Scenario(query, static, events, dialect="cqels2"))
    event("Γ gained rows" if emitted(logs, "ISTREAM") else "Γ stayed empty")
    event("a STREAM ?var block" if "STREAM ?" in query else "streams named by IRIs")


@pytest.mark.parametrize(("name", "scenario"), regression_cases())
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)
