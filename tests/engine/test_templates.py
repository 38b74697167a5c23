"""Templates as a query feature (``algebra.parameters``): the text is parsed once, its parameters
(``# @param`` lines, or names given beside the text) become a table first in the WHERE group, and
an instance binds them by rewriting the algebra, never the text."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra import optimize, to_algebra
from cqels_endpoint.algebra.parameters import bind_parameters, make_template, with_instance_table
from cqels_endpoint.engine import Engine
from cqels_endpoint.engine import core as engine_core
from cqels_endpoint.engine.registry import FILE_NAME
from cqels_endpoint.errors import ArgumentError, QuerySyntaxError
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.terms import ast_term
from cqels_endpoint.query import parser
from cqels_endpoint.query.parameters import declared_parameters
from cqels_endpoint.query.parser import parse_query
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import Var
from tests.engine.test_instance_groups import SHARED, UNSHARED, bindings, prefixed
from tests.http.test_persistence import running
from tests.stored_queries import (
    LV,
    TEMPLATE,
    collect,
    engine_of,
    floorplan_endpoint,
    load_floorplan,
    normalised,
    person,
    push,
    rfid_events,
    sparql_query,
    values_first,
)

SPARQL = {"Content-Type": "application/sparql-query"}
JSON = {"Content-Type": "application/json"}
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
STREAM = "STREAM <http://deri.org/streams/rfid> [NOW] { ?who <http://deri.org/floorplan/detectedAt> ?loc }"

# The template-where-is query with its parameter named nowhere in the text.
UNDECLARED = "\n".join(line for line in TEMPLATE.splitlines() if "@param" not in line) + "\n"

# Every template of the instance-group tests, and one whose parameter is a literal of any kind.
TEMPLATES = {name: prefixed(text, "[RANGE 3s]") for name, text in SHARED.items()} | {
    name: prefixed(text, "[TRIPLES 3]") for name, (text, _reason) in UNSHARED.items()
}
LITERAL = f"""# @param ?value
SELECT ?who WHERE {{ {STREAM} GRAPH ?g {{ ?loc ?p ?value }} }}"""
LITERALS = [ox.Literal("Kitchen"), ox.Literal("Küche", language="de"), ox.Literal("3", datatype=ox.NamedNode(XSD_INTEGER))]


def template_of(text: str):
    return make_template(parse_query(text), declared_parameters(text))


def leftmost(pattern: n.Pattern) -> n.Pattern:
    """The first element of the WHERE group under ``pattern``: down the query-level nodes, then
    the left operand of each join, OPTIONAL, MINUS and BIND the group's elements made."""
    match pattern:
        case n.Join(operands):
            return leftmost(operands[0])
        case n.LeftJoin(left=left) | n.Minus(left=left):
            return leftmost(left)
        case n.Project(input=inner) | n.Distinct(inner) | n.Reduced(inner) | n.OrderBy(input=inner) | n.Slice(input=inner):
            return leftmost(inner)
        case n.Filter(input=inner) | n.Group(input=inner) | n.Extend(input=inner):
            return leftmost(inner)
    return pattern


# --------------------------------------------------------------------------- the algebra


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_parameter_table_is_first_in_the_where_group_and_only_there(name) -> None:
    template = template_of(TEMPLATES[name])
    tables = [node for node in walk(template.algebra.pattern) if isinstance(node, n.ParameterTable)]
    assert tables == [n.ParameterTable(tuple(Var(p) for p in template.parameters), ())]
    assert leftmost(template.algebra.pattern) is tables[0]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_bound_template_is_the_query_with_its_values_first(name) -> None:
    """Binding rewrites the algebra into exactly what the text with a one-row VALUES first in
    its WHERE translates to: the instance is that query, before and after the optimizer."""
    text = TEMPLATES[name]
    template = template_of(text)
    for choice in range(3):
        terms = bindings(template.parameters, choice)
        bound = bind_parameters(template.algebra, {p: ast_term(term) for p, term in terms.items()})
        expected = to_algebra(parse_query(values_first(text, terms)))
        assert bound == expected
        assert optimize(bound) == optimize(expected)
    # The template itself is not changed by its instances.
    assert template.algebra == template_of(text).algebra


@pytest.mark.parametrize("term", LITERALS, ids=str)
def test_a_literal_of_any_kind_binds_as_written_in_values(term) -> None:
    bound = bind_parameters(template_of(LITERAL).algebra, {"value": ast_term(term)})
    assert optimize(bound) == optimize(to_algebra(parse_query(values_first(LITERAL, {"value": term}))))


def test_an_instance_group_takes_the_table_with_the_instance_column() -> None:
    template = template_of(TEMPLATES["two-params"])
    shared = with_instance_table(template.algebra)
    (table,) = [node for node in walk(shared.pattern) if isinstance(node, n.Table)]
    assert type(table) is n.InstanceTable
    assert (table.vars, table.rows) == ((n.INSTANCE, Var("person"), Var("room")), ())
    assert leftmost(shared.pattern) is table
    # Only a template's algebra has the table to bind or share, once.
    for without in (to_algebra(parse_query(values_first(TEMPLATE, {"person": ox.NamedNode(person(1))}))), shared):
        with pytest.raises(ValueError, match="one parameter table, not 0"):
            with_instance_table(without)
        with pytest.raises(ValueError, match="one parameter table, not 0"):
            bind_parameters(without, {"person": ast_term(ox.NamedNode(person(1)))})


def test_an_unused_parameter_is_refused_at_its_declaration() -> None:
    text = TEMPLATE.replace("# @param ?person", "# @param ?person ?nobody")
    with pytest.raises(QuerySyntaxError, match=r"\?nobody does not occur in the WHERE") as caught:
        template_of(text)
    assert (caught.value.lineno, caught.value.offset) == (2, 18)


@pytest.mark.parametrize(
    ("query", "used"),
    [
        (f"SELECT ?x WHERE {{ {STREAM} }}", False),
        (f"SELECT (?x AS ?y) ?who WHERE {{ {STREAM} }}", False),
        (f"CONSTRUCT {{ ?x <http://e/p> ?who }} WHERE {{ {STREAM} }}", False),
        (f"SELECT ?who WHERE {{ {STREAM} FILTER (?loc != ?x) }}", True),
        (f"SELECT ?who WHERE {{ {STREAM} {{ SELECT ?x WHERE {{ ?x ?p ?o }} }} }}", True),
        (f"SELECT ?who WHERE {{ {STREAM} }} ORDER BY ?x", True),
    ],
)
def test_a_parameter_must_occur_below_the_head(query, used) -> None:
    """In the SELECT or CONSTRUCT head only, a parameter would bind nothing the WHERE reads."""
    text = "# @param ?x\n" + query
    if used:
        assert template_of(text).parameters == ("x",)
    else:
        with pytest.raises(QuerySyntaxError, match=r"\?x does not occur in the WHERE") as caught:
            template_of(text)
        assert (caught.value.lineno, caught.value.offset) == (1, 10)


def test_parameters_given_beside_the_text() -> None:
    query = parse_query(UNDECLARED)
    assert make_template(query, ("person",)).algebra == template_of(TEMPLATE).algebra
    # Declared ones come first, then the given ones, in order.
    two = TEMPLATES["two-params"].replace("# @param ?person ?room", "# @param ?room")
    assert make_template(parse_query(two), (*declared_parameters(two), "person")).parameters == ("room", "person")
    with pytest.raises(ArgumentError, match=r"parameter \?nobody does not occur in the WHERE"):
        make_template(query, ("person", "nobody"))
    for twice in (("person", "person"), (*declared_parameters(TEMPLATE), "person")):
        with pytest.raises(ArgumentError, match=r"parameter \?person is given twice"):
            make_template(parse_query(TEMPLATE), twice)
    with pytest.raises(ArgumentError, match="at least one parameter"):
        make_template(query, ())


def test_the_engine_reads_declared_and_given_parameters() -> None:
    engine = Engine()
    try:
        assert engine.template(TEMPLATE).parameters == ("person",)
        assert engine.template(UNDECLARED, ("person",)).algebra == engine.template(TEMPLATE).algebra
        with pytest.raises(ArgumentError, match="given twice"):
            engine.template(TEMPLATE, ("person",))
        with pytest.raises(ArgumentError, match=r"\?nobody does not occur"):
            engine.template(UNDECLARED, ("nobody",))
    finally:
        engine.close()


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture
def live(endpoint_factory):
    return floorplan_endpoint(endpoint_factory)


def put_template(live, name: str, text: str, *parameters: str, **params):
    pairs = [("parameter", p) for p in parameters] + list(params.items())
    return live.put(f"/queries/{name}", body=text, params=pairs or None, headers=SPARQL)


def post_instances(live, name: str, people: range) -> object:
    body = [{"bindings": {"person": {"type": "uri", "value": person(i)}}, "name": f"p{i}"} for i in people]
    response = live.post(f"/queries/{name}/instances", body=json.dumps(body), headers=JSON)
    assert response.status == 201, response.text
    return response


def test_a_parameter_given_in_the_request_makes_the_declared_template(live) -> None:
    engine = engine_of(live)
    response = put_template(live, "given", UNDECLARED, "person")
    assert response.status == 201, response.text
    body = response.json()
    assert (body["status"], body["parameters"], body["instances"]) == ("template", ["person"], [])
    assert sparql_query(live, "declared", TEMPLATE).status == 201
    people = range(5)
    for name in ("given", "declared"):
        post_instances(live, name, people)
    got = {name: {i: collect(engine.queries[f"{name}/p{i}"]) for i in people} for name in ("given", "declared")}
    assert push(live, rfid_events(80, people=7)).status == 200
    for i in people:
        assert got["declared"][i], f"person {i} must have emissions, or the comparison proves nothing"
        assert normalised(got["given"][i]) == normalised(got["declared"][i]), f"instance p{i}"
    assert engine.plan_sharing() == {"plans": 2, "instances": 10}


def test_parameters_given_in_the_request_are_checked(live) -> None:
    two = TEMPLATES["two-params"].replace("# @param ?person ?room\n", "")
    response = put_template(live, "two", two, "person", "room")
    assert response.status == 201, response.text
    assert response.json()["parameters"] == ["person", "room"]
    error = put_template(live, "nobody", UNDECLARED, "person", "nobody").error(400)
    assert "?nobody does not occur in the WHERE" in error["error"]
    assert "given twice" in put_template(live, "twice", TEMPLATE, "person").error(400)["error"]
    assert "reads at least one stream" in put_template(live, "static", "SELECT * WHERE { ?person ?p ?o }", "person").error(400)["error"]
    for refused in ("nobody", "twice", "static"):
        assert live.get(f"/queries/{refused}").status == 404


def test_a_parameter_given_in_the_request_survives_a_restart(tmp_path: Path) -> None:
    with running(tmp_path) as live:
        load_floorplan(live)
        assert put_template(live, "given", UNDECLARED, "person", r2s="RSTREAM").status == 201
        post_instances(live, "given", range(3))
        before = live.get("/queries").json()
    (entry,) = json.loads((tmp_path / FILE_NAME).read_text())["queries"]
    assert (entry["text"], entry["parameters"], entry["r2s"]) == (UNDECLARED, ["person"], "RSTREAM")

    with running(tmp_path) as live:
        engine = endpoint(live.app).engine
        assert live.get("/queries").json() == before
        assert live.get("/queries/given").json()["parameters"] == ["person"]
        assert engine.plan_sharing() == {"plans": 1, "instances": 3}
        oracle = values_first(UNDECLARED, {"person": ox.NamedNode(person(0))})
        pairs = [(collect(engine.queries["given/p0"]), collect(engine.register(oracle, "oracle", r2s="RSTREAM", mode="recompute")))]
        post_instances(live, "given", range(3, 4))
        pairs.append((collect(engine.queries["given/p3"]),
                      collect(engine.register(values_first(UNDECLARED, {"person": ox.NamedNode(person(3))}), "oracle-3",
                                              r2s="RSTREAM", mode="recompute"))))
        assert push(live, rfid_events(50, people=5)).status == 200
        for got, expected in pairs:
            assert any(e.rows for e in expected)
            assert normalised(got) == normalised(expected)


def test_the_template_text_is_parsed_once(live, monkeypatch) -> None:
    """After the PUT, instances in batches (each after events: a new plan each), in both modes,
    parse nothing: each binds the algebra parsed at the PUT. Counted at the engine's parse and at
    the grammar, which every parse of the process goes through."""
    engine = engine_of(live)
    parsed: list[str] = []
    grammar_calls: list[str] = []

    def counting(calls: list[str], parse):
        def parse_counted(text, *args, **kwargs):
            calls.append(text)
            return parse(text, *args, **kwargs)

        return parse_counted

    monkeypatch.setattr(engine_core, "parse_query", counting(parsed, engine_core.parse_query))
    monkeypatch.setattr(parser, "_parse", counting(grammar_calls, parser._parse))
    assert sparql_query(live, "where", TEMPLATE).status == 201
    assert sparql_query(live, "again", TEMPLATE, mode="recompute").status == 201
    assert parsed == grammar_calls == [TEMPLATE, TEMPLATE]
    for batch in range(3):
        for name in ("where", "again"):
            post_instances(live, name, range(4 * batch, 4 * batch + 4))
        assert push(live, rfid_events(5, people=12, seed=batch, start=10_000 * (batch + 1))).status == 200
    assert engine.plan_sharing() == {"plans": 3, "instances": 12}
    assert len([name for name in engine.queries if name.startswith("again/")]) == 12
    assert parsed == grammar_calls == [TEMPLATE, TEMPLATE]
    # The instances still answer: a person seen after the last batch is reported by its instance.
    seen = collect(engine.queries["where/p11"])
    assert push(live, [(50_000, f"<{person(11)}> <{LV}detectedAt> <{LV}lobby> .\n")]).status == 200
    assert [e.time for e in seen] == [50_000]
    assert parsed == grammar_calls == [TEMPLATE, TEMPLATE]
