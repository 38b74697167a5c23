"""VALUES and property paths in continuous queries: differential tests and the refused paths.

Hypothesis draws queries with inline data (VALUES with UNDEF joined with stream blocks, trailing
VALUES after a GROUP BY, VALUES inside OPTIONAL and UNION branches) and with fixed-length property
paths over streams (sequences, inverses, alternatives and their nestings, in STREAM blocks and
over one or two ``FROM STREAM`` windows), replays a stream history with ``incremental_oracle`` and
asks incremental == recompute at every evaluation time, for ISTREAM, RSTREAM and DSTREAM. An
alternative is the bag union of its branches (§18.4), so ``:p|:p`` counts a match twice.

Paths with ``*``, ``+``, ``?`` or ``!`` are path windows (``tests/engine/test_incremental_paths.py``);
over the merge of several windows they are refused at registration with a ``QuerySyntaxError``
naming the operator and pointing at it. Shrunk failures are kept under
``tests/regressions/values_paths/``.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, Scenario, check, check_keeping_failures, emitted, regression_cases
from paths import TESTS
from test_incremental_differential import EX, STREAMS, WINDOWS, histories, static_graphs
from test_incremental_distinct_union_optional import blocks

from cqels_endpoint import Engine
from cqels_endpoint.errors import QuerySyntaxError

REGRESSIONS = TESTS / "regressions" / "values_paths"
PREFIX = f"PREFIX : <{EX}>\n"

# Fixed-length paths between ?a and ?b over the stream vocabulary (:p, :q between entities).
PATHS = (
    ":p|:q",
    ":p|:p",
    "^:p|:q",
    "(:p/:q)|^:q",
    "^(:p|:q)",
    "^(:p/:q)",
    ":p/(:q|^:p)",
    "(:p|:q)/(:p|^:q)",
    ":p/^:p",
)
PATH_SHAPES = (*tuple(f"?a {path} ?b" for path in PATHS), ":e0 :p|^:q ?b", "?a :p|:q :e1", "?a :p|:q ?a", "?a (:p|:q)/:v ?n", "_:x :p|:q ?b . _:x :v ?n")
OTHER_SHAPES = ("?b :p ?c", "?b :v ?n", "?a :q ?c")
VALUES = (
    "VALUES ?b { :e0 :e1 }",
    "VALUES ?b { :e1 UNDEF }",
    "VALUES (?a ?n) { (:e0 1) (UNDEF 2) (:e1 UNDEF) }",
    "VALUES (?b ?c) { (:e1 :e0) (:e1 :e0) (UNDEF :e2) }",
    "VALUES ?c { }",
)


@st.composite
def path_queries(draw) -> str:
    if draw(st.booleans()):
        # Over FROM STREAM windows: with two of them each step matches in their merge.
        windows = " ".join(
            f"FROM STREAM <{stream}> {draw(WINDOWS)}"
            for stream in draw(st.lists(st.sampled_from(STREAMS), min_size=1, max_size=2, unique=True))
        )
        shapes = draw(st.lists(st.sampled_from(PATH_SHAPES + OTHER_SHAPES), min_size=1, max_size=2, unique=True))
        return PREFIX + f"SELECT *\n{windows}\nWHERE {{ {' . '.join(shapes)} }}"
    body = draw(blocks(PATH_SHAPES))
    # A blank node label belongs to one basic graph pattern: the second block gets its own.
    second = draw(blocks(PATH_SHAPES)).replace("_:x", "_:y")
    extra = draw(st.sampled_from(("", "", "join", "optional", "union", "filter")))
    if extra == "join":
        body += " " + draw(blocks(OTHER_SHAPES))
    elif extra == "optional":
        body += f" OPTIONAL {{ {second} }}"
    elif extra == "union":
        body = f"{{ {body} }} UNION {{ {second} }}"
    elif extra == "filter":
        body += " FILTER (?a != ?b)"
    head = draw(st.sampled_from(("SELECT *", "SELECT ?a ?b", "SELECT DISTINCT ?b", "CONSTRUCT")))
    if head == "CONSTRUCT":
        return PREFIX + f"CONSTRUCT {{ ?a :out ?b }}\nWHERE {{ {body} }}"
    return PREFIX + f"{head}\nWHERE {{ {body} }}"


@st.composite
def values_queries(draw) -> str:
    values = draw(st.sampled_from(VALUES))
    stream = draw(blocks(("?a :p ?b", "?a :v ?n", "?a :p ?b . ?b :p ?c", "?b :q ?c")))
    where = draw(st.sampled_from(("group", "trailing", "optional", "optional stream", "union", "aggregate")))
    if where == "group":
        return PREFIX + f"SELECT *\nWHERE {{ {stream} {values} }}"
    if where == "trailing":
        return PREFIX + f"SELECT *\nWHERE {{ {stream} }}\n{values}"
    if where == "optional":
        return PREFIX + f"SELECT *\nWHERE {{ {stream} OPTIONAL {{ {values} }} }}"
    if where == "optional stream":
        # The OPTIONAL's right side joins a window with inline data.
        return PREFIX + f"SELECT *\nWHERE {{ {draw(blocks(('?a :p ?b', '?a :v ?n')))} OPTIONAL {{ {stream} {values} }} }}"
    if where == "union":
        return PREFIX + f"SELECT *\nWHERE {{ {{ {values} }} UNION {{ {stream} }} }}"
    # A trailing VALUES after GROUP BY joins with the groups.
    return PREFIX + f"SELECT ?a (COUNT(*) AS ?k)\nWHERE {{ {stream} }}\nGROUP BY ?a\nVALUES ?a {{ :e0 :e2 UNDEF }}"


@settings(ORACLE_SETTINGS, max_examples=150)
@given(query=st.one_of(path_queries(), values_queries()), static=static_graphs(), events=histories())
def test_incremental_equals_recompute(query: str, static: str, events: list[list]) -> None:
    logs = check_keeping_failures(Scenario(query, static, events), REGRESSIONS)
    event("Γ gained rows" if emitted(logs, "ISTREAM") else "Γ stayed empty")


@pytest.mark.parametrize(("name", "scenario"), regression_cases(REGRESSIONS))
def test_regression(name: str, scenario: Scenario) -> None:
    check(scenario)


def _rows(query, engine: Engine, stream: str, ntriples: str, time: int) -> list[dict[str, str]]:
    seen: list = []
    query.subscribe(seen.append)
    engine.push(stream, ntriples, time=time)
    return sorted(({k: v.value for k, v in row.items()} for row in seen[-1].rows), key=lambda r: sorted(r.items()))


def test_an_alternative_counts_each_branch_and_reads_one_window_per_branch() -> None:
    engine = Engine()
    query = engine.register(
        PREFIX + "SELECT ?b WHERE { STREAM <http://ex.org/s0> [RANGE 10ms] { :e0 :p|(:q/^:p)|:p ?b } }",
        r2s="RSTREAM",
    )
    data = f"<{EX}e0> <{EX}p> <{EX}e1> .\n<{EX}e0> <{EX}q> <{EX}e2> .\n<{EX}e0> <{EX}p> <{EX}e0> ."
    rows = _rows(query, engine, STREAMS[0], data, 1)
    # :p twice (two branches) for e1 and e0; :q/^:p from e2 back to nothing (no ?x :p e2).
    assert rows == [{"b": EX + "e0"}] * 2 + [{"b": EX + "e1"}] * 2
    # Four stream triple patterns: :p, :q, :p (the inverse step), :p — each with its own window.
    assert len(query.patterns) == 4
    assert "U1 union" in query.explain() and "U2 union" in query.explain()
    engine.close()


def test_values_with_undef_joins_with_every_stream_row() -> None:
    engine = Engine()
    query = engine.register(
        PREFIX + "SELECT * WHERE { STREAM <http://ex.org/s0> [RANGE 10ms] { ?a :p ?b } } VALUES (?b ?c) { (:e1 1) (UNDEF 2) }",
        r2s="RSTREAM",
    )
    rows = _rows(query, engine, STREAMS[0], f"<{EX}e0> <{EX}p> <{EX}e1> .\n<{EX}e0> <{EX}p> <{EX}e2> .", 1)
    assert rows == [
        {"a": EX + "e0", "b": EX + "e1", "c": "1"},
        {"a": EX + "e0", "b": EX + "e1", "c": "2"},
        {"a": EX + "e0", "b": EX + "e2", "c": "2"},
    ]
    engine.close()


@pytest.mark.parametrize(
    ("datasets", "merged"),
    [
        ("FROM STREAM <http://ex.org/s0> [RANGE 1s] FROM STREAM <http://ex.org/s1> [RANGE 1s]", "several windows"),
        ("FROM STREAM <http://ex.org/s0> [RANGE 1s] FROM <http://ex.org/g>", "a window and the static default graph"),
    ],
    ids=["two-windows", "window-and-static"],
)
@pytest.mark.parametrize("mode", ["incremental", "recompute"])
def test_paths_over_a_merge_of_graphs_are_refused(datasets: str, merged: str, mode: str) -> None:
    # Each window is a graph of its own: a closure over their merge has no window to read.
    text = PREFIX + f"SELECT *\n{datasets}\nWHERE {{ ?a :p/:q* ?b }}"
    with pytest.raises(QuerySyntaxError) as caught:
        Engine().register(text, mode=mode)
    assert caught.value.message.startswith(
        f"the property path operator `*` (zero or more) cannot be matched against the merge of {merged}"
    )
    assert (caught.value.lineno, caught.value.offset) == (4, 15)
    assert "?a :p/:q* ?b" in str(caught.value)


def test_static_paths_of_any_kind_stay_allowed_beside_a_stream() -> None:
    engine = Engine()
    query = engine.register(
        PREFIX + "SELECT * WHERE { STREAM <http://ex.org/s0> [RANGE 1s] { ?a :p ?b } ?b :s+ ?c }", mode="incremental"
    )
    assert "static cache" in query.explain()
    engine.close()
