"""Extension functions called by IRI (``runtime.functions.extensions``): the built-in haversine and
levenshtein, the registration API, and the SPARQL error semantics of a call, in the interpreter
and through pyoxigraph's ``custom_functions`` (which the recompute oracle, the static caches and
one-shot queries use)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from decimal import Decimal

import pyoxigraph as ox
import pytest

import cqels_endpoint
from cqels_endpoint import parse_query
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression, filter_passes
from cqels_endpoint.runtime.functions.extensions import (
    EARTH_RADIUS_KM,
    HAVERSINE,
    LEVENSHTEIN,
    custom_functions,
    register_function,
    registered_functions,
    unregister_function,
)

XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = "PREFIX cqfn: <urn:cqels:fn:> PREFIX ex: <http://example.org/> "
USER = "http://example.org/fn/user"
ERROR = "error"


def expression(text: str):
    return parse_query(f"{PREFIXES}SELECT ({text} AS ?r) WHERE {{ ?s ?p ?o }}").form.projection[0].expr


def evaluate(text: str, row: dict | None = None):
    try:
        return compile_expression(expression(text))(row or {})
    except ExpressionError:
        return ERROR


def oxigraph(text: str, row: dict | None = None):
    """The same expression evaluated by pyoxigraph with the registry as its custom functions."""
    values = " ".join(f"?{name}" for name in row or {})
    bindings = " ".join(str(term) for term in (row or {}).values())
    data = f"VALUES ({values}) {{ ({bindings}) }}" if row else ""
    (solution,) = ox.Store().query(f"{PREFIXES}SELECT ({text} AS ?r) WHERE {{ {data} }}", custom_functions=custom_functions())
    return ERROR if solution["r"] is None else solution["r"]


def double(value: str) -> ox.Literal:
    return ox.Literal(value, datatype=ox.NamedNode(XSD + "double"))


@pytest.fixture
def user_function() -> Iterator[list]:
    """Registers ``USER`` with the function the test appends to the list it gets; removed after."""
    slot: list = []
    register_function(USER, lambda *args: slot[0](*args))
    try:
        yield slot
    finally:
        unregister_function(USER)


# --------------------------------------------------------------------------- haversine


def test_haversine_is_the_great_circle_distance_in_km_latitude_first() -> None:
    one_degree = EARTH_RADIUS_KM * math.pi / 180
    assert float(evaluate("cqfn:haversine(0, 0, 0, 1)").value) == pytest.approx(one_degree)
    assert float(evaluate("cqfn:haversine(0, 0, 1, 0)").value) == pytest.approx(one_degree)
    # Paris → London is about 344 km; latitude and longitude swapped would give about 229 km.
    paris_london = evaluate("<urn:cqels:fn:haversine>(48.8566, 2.3522, 51.5074, -0.1278)")
    assert paris_london.datatype.value == XSD + "double"
    assert float(paris_london.value) == pytest.approx(343.56, abs=0.1)
    # Antipodes: half the circumference, whatever the rounding of the square root.
    assert float(evaluate("cqfn:haversine(90, 0, -90, 0)").value) == pytest.approx(EARTH_RADIUS_KM * math.pi)
    assert evaluate("cqfn:haversine(?a, 0.0, ?a, 0)", {"a": double("12.5")}) == double("0")


@pytest.mark.parametrize(
    "text",
    [
        'cqfn:haversine("48.8", 2.3, 51.5, 0.1)',  # a string is not a number
        "cqfn:haversine(91, 0, 0, 0)",  # latitude out of range
        "cqfn:haversine(0, 181, 0, 0)",  # longitude out of range
        'cqfn:haversine("NaN"^^<http://www.w3.org/2001/XMLSchema#double>, 0, 0, 0)',
        "cqfn:haversine(0, 0, 0)",  # wrong arity
        "cqfn:haversine(0, 0, 0, 0, 0)",
        "cqfn:haversine(?unbound, 0, 0, 0)",
    ],
)
def test_haversine_errors_are_expression_errors_in_both_evaluators(text: str) -> None:
    assert evaluate(text) == ERROR
    assert oxigraph(text) == ERROR


# --------------------------------------------------------------------------- levenshtein


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [('"kitten"', '"sitting"', 3), ('""', '"abc"', 3), ('"flaw"', '"lawn"', 2), ('"été"@fr', '"ete"', 2), ('"same"', '"same"', 0)],
)
def test_levenshtein_counts_edits_in_code_points(a: str, b: str, distance: int) -> None:
    for result in (evaluate(f"cqfn:levenshtein({a}, {b})"), oxigraph(f"cqfn:levenshtein({a}, {b})")):
        assert result == ox.Literal(str(distance), datatype=ox.NamedNode(XSD + "integer"))


@pytest.mark.parametrize("text", ['cqfn:levenshtein("a", 1)', 'cqfn:levenshtein(ex:a, "a")', 'cqfn:levenshtein("a")'])
def test_levenshtein_of_a_non_string_is_an_error(text: str) -> None:
    assert evaluate(text) == ERROR
    assert oxigraph(text) == ERROR


def test_filter_and_bind_semantics_of_a_failing_call() -> None:
    condition = compile_expression(expression("cqfn:levenshtein(?a, ?b) <= 1"))
    assert filter_passes(condition, {"a": ox.Literal("cat"), "b": ox.Literal("cut")})
    assert not filter_passes(condition, {"a": ox.Literal("cat"), "b": ox.Literal("dog")})
    assert not filter_passes(condition, {"a": ox.Literal("cat"), "b": ox.Literal("1", datatype=ox.NamedNode(XSD + "integer"))})
    assert not filter_passes(condition, {"a": ox.Literal("cat")})
    # An error inside COALESCE falls through to the next argument, as in any expression.
    assert evaluate('COALESCE(cqfn:levenshtein(?a, 1), "none")', {"a": ox.Literal("x")}) == ox.Literal("none")


def test_an_unknown_iri_is_an_error() -> None:
    assert evaluate("<http://example.org/fn/nothing>(1)") == ERROR


# --------------------------------------------------------------------------- registration


def test_a_registered_function_runs_in_both_evaluators_and_python_results_become_literals(user_function: list) -> None:
    user_function.append(lambda a, b: a.value + b.value)
    assert evaluate(f'<{USER}>("ab", "cd")') == oxigraph(f'<{USER}>("ab", "cd")') == ox.Literal("abcd")
    cases = [(True, f"<{XSD}boolean>", "true"), (7, f"<{XSD}integer>", "7"), (0.5, f"<{XSD}double>", "0.5"),
             (Decimal("2.50"), f"<{XSD}decimal>", "2.5"), (ox.NamedNode("http://x"), None, "http://x")]  # fmt: skip
    for value, datatype, lexical in cases:
        user_function[0] = lambda *_, value=value: value
        for result in (evaluate(f"<{USER}>()"), oxigraph(f"<{USER}>()")):
            assert result.value == lexical
            assert datatype is None or str(result.datatype) == datatype


def test_the_registry_is_read_at_each_call(user_function: list) -> None:
    compiled = compile_expression(expression(f"<{USER}>(?x)"))
    user_function.append(lambda x: x)
    assert compiled({"x": ox.Literal("a")}) == ox.Literal("a")
    unregister_function(USER)
    with pytest.raises(ExpressionError):
        compiled({"x": ox.Literal("a")})
    register_function(USER, lambda x: "again")
    assert compiled({"x": ox.Literal("a")}) == ox.Literal("again")


def test_arity_is_read_from_the_signature() -> None:
    register_function(USER, lambda a, b=None: "ok")
    try:
        assert evaluate(f"<{USER}>(1)") == evaluate(f"<{USER}>(1, 2)") == ox.Literal("ok")
        assert evaluate(f"<{USER}>()") == evaluate(f"<{USER}>(1, 2, 3)") == oxigraph(f"<{USER}>(1, 2, 3)") == ERROR
    finally:
        unregister_function(USER)


def test_a_raising_or_ill_typed_function_is_an_error_logged_once(user_function: list, caplog) -> None:
    user_function.append(lambda x: 1 / 0)
    with caplog.at_level(logging.WARNING, logger="cqels_endpoint.runtime"):
        assert evaluate(f"<{USER}>(1)") == ERROR
        assert oxigraph(f"<{USER}>(1)") == ERROR
        assert evaluate(f"<{USER}>(2)") == ERROR
    records = [r for r in caplog.records if USER in r.getMessage()]
    assert len(records) == 1 and "ZeroDivisionError" in records[0].getMessage()
    # ExpressionError and None are the function's own "type error": silent.
    caplog.clear()
    user_function[0] = lambda x: None
    assert evaluate(f"<{USER}>(1)") == ERROR

    def refuse(x):
        raise cqels_endpoint.ExpressionError

    user_function[0] = refuse
    assert evaluate(f"<{USER}>(1)") == oxigraph(f"<{USER}>(1)") == ERROR
    assert not caplog.records


def test_an_ill_typed_result_is_logged(caplog) -> None:
    register_function(USER, lambda: [1, 2])
    try:
        with caplog.at_level(logging.WARNING, logger="cqels_endpoint.runtime"):
            assert evaluate(f"<{USER}>()") == oxigraph(f"<{USER}>()") == ERROR
        assert [r.getMessage() for r in caplog.records if USER in r.getMessage()] == [
            f"extension function <{USER}> returned list [1, 2], which is not an RDF term; its calls are expression errors (logged once)"
        ]
    finally:
        unregister_function(USER)


def test_registration_refusals() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_function(HAVERSINE, lambda *args: 0)
    with pytest.raises(ValueError, match="XSD constructor"):
        register_function(XSD + "integer", int)
    with pytest.raises(ValueError, match="absolute IRI"):
        register_function("not an iri", int)
    with pytest.raises(TypeError, match="callable"):
        register_function(USER, 42)
    with pytest.raises(KeyError):
        unregister_function(USER)
    assert {HAVERSINE, LEVENSHTEIN} <= registered_functions().keys()
    assert cqels_endpoint.register_function is register_function


def test_replacing_a_built_in_and_restoring_it() -> None:
    original = registered_functions()[LEVENSHTEIN]
    register_function(ox.NamedNode(LEVENSHTEIN), lambda a, b: -1, replace=True)
    try:
        assert evaluate('cqfn:levenshtein("a", "b")') == oxigraph('cqfn:levenshtein("a", "b")')
        assert evaluate('cqfn:levenshtein("a", "b")').value == "-1"
    finally:
        register_function(LEVENSHTEIN, original, replace=True)
    assert evaluate('cqfn:levenshtein("a", "b")').value == "1"
