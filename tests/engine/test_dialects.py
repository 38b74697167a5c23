"""The two dialects (issue 29, items 1 and 2): which one a query reads in, and what CQELS-QL 2.0's
``[RANGE d]`` and ``HAVING`` on SELECT aliases mean there, against the specification's wording
(``CQELS-QL_SPEC.md``) and, for random events, against the CQELS 1 query that spells the same
meaning out (``[RANGE d TUMBLING]``, ``HAVING`` over the aggregate itself), in both modes.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.engine import Engine
from cqels_endpoint.engine.registry import QueryRegistry
from cqels_endpoint.errors import ArgumentError
from cqels_endpoint.query.windows import RangeWindow
from cqels_endpoint.testing import Push, run

EX = "http://example.org/"
READINGS = "urn:cqels:stream:Readings"
PREFIX = f"PREFIX ex: <{EX}>\n"

# §12, "Windowed aggregation (per-group stats)", as the specification writes it.
PER_SENSOR_STATS = PREFIX + """REGISTER QUERY PerSensorStats AS
SELECT ?sensor (AVG(?t) AS ?avg) (MAX(?t) AS ?peak) (COUNT(*) AS ?n)
FROM STREAM Readings [RANGE 3s]
WHERE { STREAM Readings { ?sensor ex:temperature ?t . } }
GROUP BY ?sensor
"""


def reading(time: int, sensor: str, value: int) -> Push:
    return Push(READINGS, time, f"<{EX}{sensor}> <{EX}temperature> {value} .")


def rows(emission) -> list[tuple]:
    return sorted(tuple(str(row.get(name)) for name in emission.variables) for row in emission.rows)


def integer(value: int) -> str:
    return f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>'


# --------------------------------------------------------------------------- which dialect


@pytest.mark.parametrize(
    ("text", "setting", "expected"),
    [
        (PER_SENSOR_STATS, None, "cqels2"),  # REGISTER QUERY Name AS: CQELS-QL 2.0 §1
        (PER_SENSOR_STATS, "cqels", "cqels"),  # asked for: kept
        (PER_SENSOR_STATS.replace("REGISTER QUERY PerSensorStats AS\n", ""), None, "cqels"),
        (PER_SENSOR_STATS.replace("REGISTER QUERY PerSensorStats AS\n", ""), "cqels2", "cqels2"),
        (PER_SENSOR_STATS.replace("REGISTER QUERY PerSensorStats AS", "REGISTER RSTREAM <http://ex.org/q> AS"), None, "cqels"),
    ],
)
def test_the_dialect_of_a_query_follows_one_predictable_rule(text, setting, expected):
    engine = Engine()
    try:
        assert engine.register(text, name="q", dialect=setting).dialect == expected
    finally:
        engine.close()


def test_the_engine_setting_is_the_default_and_a_registration_overrides_it():
    plain = PER_SENSOR_STATS.replace("REGISTER QUERY PerSensorStats AS\n", "")
    engine = Engine(dialect="cqels2")
    try:
        assert engine.register(plain, name="a").dialect == "cqels2"
        assert engine.register(PER_SENSOR_STATS, name="b", dialect="cqels").dialect == "cqels"
        assert "cqels2" in engine.explain("a").splitlines()[0]
        with pytest.raises(ArgumentError, match="dialect must be one of auto, cqels, cqels2"):
            engine.register(plain, name="c", dialect="sparql")
    finally:
        engine.close()
    with pytest.raises(ArgumentError, match="dialect"):
        Engine(dialect="cqels3")


def test_a_stored_query_keeps_its_dialect_across_a_restart(tmp_path):
    plain = PER_SENSOR_STATS.replace("REGISTER QUERY PerSensorStats AS\n", "")
    path = tmp_path / "queries.json"
    engine = Engine()
    registry = QueryRegistry(engine, path)
    registry.put("stats", plain, None, "incremental", dialect="cqels2")
    registry.put("plain", plain, None, "incremental")
    registry.close()
    engine.close()
    again = Engine()
    try:
        restored = QueryRegistry(again, path)
        assert restored.restore() == 2
        assert again.queries["stats"].dialect == "cqels2"
        assert again.queries["plain"].dialect == "cqels"
    finally:
        again.close()


# --------------------------------------------------------------------------- §3.1 [RANGE d]


@pytest.mark.parametrize("mode", ["incremental", "recompute"])
def test_range_is_tumbling_in_cqels2_and_sliding_at_every_event_in_cqels(mode):
    # §3.1: "Tumbling time | [RANGE 10s] | Fixed, non-overlapping N-second windows." One result per
    # window: the windows of 3 s from the first event, [0, 3000) and [3000, 6000).
    events = [reading(0, "s1", 10), reading(1000, "s1", 20), reading(2000, "s1", 30), reading(3500, "s1", 40)]
    emitted = run(PER_SENSOR_STATS, events, mode=mode, r2s="RSTREAM", advance_to=6000)
    assert [(e.time, rows(e)) for e in emitted] == [
        (3000, [(f"<{EX}s1>", '"20"^^<http://www.w3.org/2001/XMLSchema#decimal>', integer(30), integer(3))]),
        (6000, [(f"<{EX}s1>", '"40"^^<http://www.w3.org/2001/XMLSchema#decimal>', integer(40), integer(1))]),
    ]
    # CQELS 1: after every event (and at the advance) over the last 3 s, τ − 3000 < t ≤ τ.
    eager = run(PER_SENSOR_STATS, events, mode=mode, r2s="RSTREAM", advance_to=6000, dialect="cqels")
    assert [(e.time, [row[3] for row in rows(e)]) for e in eager] == [
        (0, [integer(1)]), (1000, [integer(2)]), (2000, [integer(3)]), (3500, [integer(3)]), (6000, [integer(1)]),
    ]


def test_a_range_beside_a_directional_window_is_read_at_each_anchor_in_both_dialects():
    text = PREFIX + """REGISTER QUERY Around AS
SELECT ?a ?b FROM NAMED WINDOW ex:w1 ON Readings [RANGE 2s] FROM NAMED WINDOW ex:w2 ON Readings [FUTURE 1s]
WHERE { WINDOW ex:w1 { ?a ex:temperature ?x } WINDOW ex:w2 { ?b ex:temperature ?y } }"""
    engine = Engine()
    try:
        query = engine.register(text)
        assert query.dialect == "cqels2"
        assert RangeWindow(2000) in {p.window for p in query.patterns}
    finally:
        engine.close()


# --------------------------------------------------------------------------- §9 HAVING on aliases


LEADERBOARD = PREFIX + """REGISTER QUERY Busy AS
SELECT ?sensor (COUNT(*) AS ?cnt) (AVG(?t) * 2 AS ?twice)
FROM STREAM Readings [RANGE 10s STEP 10s]
WHERE { STREAM Readings { ?sensor ex:temperature ?t . } }
GROUP BY ?sensor
HAVING(?cnt > 1 && ?twice >= 40)
"""


@pytest.mark.parametrize("mode", ["incremental", "recompute"])
def test_having_reads_select_aliases_in_cqels2_and_sees_them_unbound_in_cqels(mode):
    # §9: "HAVING references the SELECT aliases (e.g. HAVING(?cnt > 1), not HAVING(COUNT(*) > 1))".
    events = [reading(0, "s1", 10), reading(1, "s1", 40), reading(2, "s2", 90), reading(3, "s3", 5), reading(4, "s3", 6)]
    emitted = run(LEADERBOARD, events, mode=mode, r2s="RSTREAM", advance_to=10_000)
    assert [(e.time, [row[:2] for row in rows(e)]) for e in emitted] == [(10_000, [(f"<{EX}s1>", integer(2))])]
    # SPARQL 1.1 §18.2.4.1: HAVING is evaluated before the projection's extensions, so the alias
    # is unbound there, the condition an error, and no group is kept.
    plain = run(LEADERBOARD, events, mode=mode, r2s="RSTREAM", advance_to=10_000, dialect="cqels")
    assert [(e.time, rows(e)) for e in plain] == [(10_000, [])]


def test_a_variable_of_the_where_clause_keeps_its_meaning_in_having():
    # ?t is bound by the WHERE clause, so HAVING(?t …) reads it as SPARQL does (an error outside
    # an aggregate over a group): the SELECT alias of the same name is not substituted.
    text = LEADERBOARD.replace("(AVG(?t) * 2 AS ?twice)", "(SAMPLE(?t) AS ?sample)").replace(
        "HAVING(?cnt > 1 && ?twice >= 40)", "HAVING(BOUND(?t))"
    )
    emitted = run(text, [reading(0, "s1", 10), reading(1, "s1", 40)], r2s="RSTREAM", advance_to=10_000)
    assert [(e.time, rows(e)) for e in emitted] == [(10_000, [])]


# --------------------------------------------------------------------------- against CQELS 1 spellings


SENSORS = st.sampled_from(["s1", "s2", "s3"])
readings = st.lists(st.tuples(st.integers(0, 900), SENSORS, st.integers(0, 50)), min_size=1, max_size=20)


def _pushes(drawn) -> list[Push]:
    time, pushes = 0, []
    for gap, sensor, value in drawn:
        time += gap
        pushes.append(reading(time, sensor, value))
    return pushes


def _emitted(text, pushes, mode, dialect, end):
    return [(e.time, Counter(rows(e))) for e in run(text, pushes, mode=mode, r2s="RSTREAM", advance_to=end, dialect=dialect)]


@settings(max_examples=40, deadline=None)
@given(drawn=readings, range_ms=st.sampled_from([500, 1000, 2500]), threshold=st.integers(0, 3), mode=st.sampled_from(["incremental", "recompute"]))
def test_cqels2_means_what_the_cqels_spelling_of_tumbling_and_having_means(drawn, range_ms, threshold, mode):
    """``[RANGE d]`` + ``HAVING(?alias …)`` in cqels2 == ``[RANGE d TUMBLING]`` + ``HAVING(aggregate …)``
    in cqels, emission for emission, in each mode."""
    pushes = _pushes(drawn)
    end = pushes[-1].time + 2 * range_ms
    cqels2 = PREFIX + f"""SELECT ?sensor (COUNT(*) AS ?cnt) (MAX(?t) - MIN(?t) AS ?spread)
FROM STREAM <{READINGS}> [RANGE {range_ms}ms]
WHERE {{ ?sensor ex:temperature ?t }} GROUP BY ?sensor HAVING(?cnt > {threshold} || ?spread > 20)"""
    cqels = cqels2.replace(f"[RANGE {range_ms}ms]", f"[RANGE {range_ms}ms TUMBLING]").replace(
        f"HAVING(?cnt > {threshold} || ?spread > 20)", f"HAVING(COUNT(*) > {threshold} || MAX(?t) - MIN(?t) > 20)"
    )
    assert _emitted(cqels2, pushes, mode, "cqels2", end) == _emitted(cqels, pushes, mode, "cqels", end)
