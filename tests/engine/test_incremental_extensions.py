"""Extension functions in continuous queries: the incremental mode (interpreted expressions, static
caches built by pyoxigraph) emits what the recompute oracle (pyoxigraph with the same functions)
emits, at every evaluation, for the built-ins and for a function registered from Python."""

from __future__ import annotations

from collections.abc import Iterator

import pyoxigraph as ox
import pytest
from incremental_oracle import Scenario, check

from cqels_endpoint import register_function, unregister_function

EX = "http://ex.org/"
S = EX + "s"
PREFIX = f"PREFIX : <{EX}>\nPREFIX cqfn: <urn:cqels:fn:>\n"
DOUBLE = "<http://www.w3.org/2001/XMLSchema#double>"
# Chargers at fixed places (static); cars report their position (stream).
STATIC = "\n".join(
    f'<{EX}{name}> <{EX}lat> "{lat}"^^{DOUBLE} <{EX}g> .\n<{EX}{name}> <{EX}lon> "{lon}"^^{DOUBLE} <{EX}g> .\n<{EX}{name}> <{EX}label> "{label}" <{EX}g> .'
    for name, lat, lon, label in (("c1", 52.52, 13.405, "Berlin"), ("c2", 48.137, 11.575, "Munich"), ("c3", 52.50, 13.40, "Berlln"))
)
STATIC_DEFAULT = STATIC.replace(f" <{EX}g> .", " .")
USER = f"{EX}fn/bucket"


def position(time: int, car: str, lat: float, lon: float) -> list:
    return ["push", S, time, f'<{EX}{car}> <{EX}lat> "{lat}"^^{DOUBLE} .\n<{EX}{car}> <{EX}lon> "{lon}"^^{DOUBLE} .']


EVENTS = [
    position(1, "car1", 52.53, 13.41),
    position(2, "car2", 48.14, 11.58),
    position(3, "car3", 40.0, 3.7),
    ["push", S, 4, f'<{EX}car4> <{EX}lat> "north" .\n<{EX}car4> <{EX}lon> "{13.4}"^^{DOUBLE} .'],  # ill-typed: an error
    ["advance", 8],
    position(9, "car1", 48.14, 11.57),
    ["advance", 20],
]


def rows(logs: dict, variable: str) -> set:
    return {row[variable].value for emission in logs["recompute", "RSTREAM"] for row in emission.rows if variable in row}


def test_haversine_in_a_filter_over_a_stream_static_join() -> None:
    logs = check(
        Scenario(
            PREFIX + "SELECT ?car ?charger WHERE { STREAM <" + S + "> [RANGE 5s] { ?car :lat ?la ; :lon ?lo } "
            "?charger :lat ?cla ; :lon ?clo FILTER(cqfn:haversine(?la, ?lo, ?cla, ?clo) <= 5.0) }",
            STATIC_DEFAULT,
            EVENTS,
        )
    )
    assert {(r["car"].value, r["charger"].value) for e in logs["incremental", "RSTREAM"] for r in e.rows} == {
        (EX + "car1", EX + "c1"), (EX + "car1", EX + "c3"), (EX + "car2", EX + "c2"), (EX + "car1", EX + "c2")
    }  # fmt: skip


def test_bind_and_select_expressions_leave_an_error_unbound() -> None:
    logs = check(
        Scenario(
            PREFIX
            + 'SELECT ?car ?d (cqfn:levenshtein(STR(?car), "http://ex.org/car") AS ?edits) WHERE { STREAM <'
            + S
            + "> [RANGE 5s] { ?car :lat ?la ; :lon ?lo } BIND(cqfn:haversine(?la, ?lo, 0, 0) AS ?d) }",
            "",
            EVENTS,
        )
    )
    cars = {r["car"].value: r for e in logs["incremental", "RSTREAM"] for r in e.rows}
    assert "d" not in cars[EX + "car4"] and cars[EX + "car4"]["edits"].value == "1"
    assert rows(logs, "d") and rows(logs, "edits") == {"1"}


def test_a_static_cache_filter_calls_the_function_in_pyoxigraph() -> None:
    # The FILTER reads static variables only: it goes into the cache, which pyoxigraph builds.
    logs = check(
        Scenario(
            PREFIX + "SELECT ?car ?charger WHERE { STREAM <" + S + "> [RANGE 5s] { ?car :lat ?la } "
            'GRAPH :g { ?charger :label ?label FILTER(cqfn:levenshtein(?label, "Berlin") <= 1) } }',
            STATIC,
            EVENTS,
        )
    )
    assert rows(logs, "charger") == {EX + "c1", EX + "c3"}


def test_aggregate_arguments() -> None:
    logs = check(
        Scenario(
            PREFIX + "SELECT (MIN(cqfn:haversine(?la, ?lo, ?cla, ?clo)) AS ?nearest) (COUNT(cqfn:haversine(?la, ?lo, 0, 0)) AS ?n) "
            "WHERE { STREAM <" + S + "> [RANGE 5s] { ?car :lat ?la ; :lon ?lo } ?charger :lat ?cla ; :lon ?clo }",
            STATIC_DEFAULT,
            # Without the ill-typed event: over an argument in error, pyoxigraph leaves every aggregate of
            # the group unbound where the incremental mode skips the error (any expression, not only these).
            [event for event in EVENTS if "north" not in str(event)],
        )
    )
    assert rows(logs, "nearest") and rows(logs, "n")


@pytest.fixture
def bucket() -> Iterator[None]:
    # A user function returning a Python int: the 100 km band of a distance.
    register_function(USER, lambda km: int(float(km.value) // 100) if isinstance(km, ox.Literal) else None)
    try:
        yield
    finally:
        unregister_function(USER)


def test_a_function_registered_from_python_in_group_by(bucket) -> None:
    logs = check(
        Scenario(
            PREFIX + "SELECT ?band (COUNT(*) AS ?n) WHERE { STREAM <" + S + "> [RANGE 5s] { ?car :lat ?la ; :lon ?lo } "
            f"BIND(<{USER}>(cqfn:haversine(?la, ?lo, 52.52, 13.405)) AS ?band) }} GROUP BY ?band",
            "",
            EVENTS,
        )
    )
    assert {"0", "5"} <= rows(logs, "band")
