"""``FILTER(SEQ(…))`` (issue 17 item 4) through the engine, in both modes.

The spec's CEP queries (LossOfControl, OverheatThenStall) and the constructs of the lead's
semantics (gaps ``NOT ?x``, ``?x+``, ``?x{n}``, per-event FILTERs, guards, ``BIND`` of an event
variable) on hand-made streams; the located errors of the checks the translation makes; and a
property test: random event streams (random subjects, alert types and values, times with ties)
through a ``RANGE`` or a ``TRIPLES`` window, where the incremental mode, the recompute mode and a
brute-force oracle — the windows simulated from the pushed events, the events and their order
computed here, the matches enumerated by ``runtime.cep.all_matches`` — agree at every evaluation.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pytest
from cqels_ql2_examples import EXAMPLES, PREFIXES
from hypothesis import given, settings
from hypothesis import strategies as st
from incremental_oracle import ORACLE_SETTINGS, Scenario, check

from cqels_endpoint import Engine
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.runtime.cep import SeqSpec, SeqStep, all_matches
from cqels_endpoint.testing import Push, run

EX = "http://example.org/"
VSS = "https://covesa.global/vss#"
STREAM_BASE = "urn:cqels:stream:"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
MODES = ("incremental", "recompute")
# The CEP queries of the CQELS-QL 2.0 specification (§7 and §12).
SPEC = {name: text for name, text, _refused in EXAMPLES}


def rows(emission) -> Counter:
    """An emission's rows as a bag of ``{variable: local name or number}``."""
    return Counter(
        frozenset((name, term.value.rsplit("/", 1)[-1].rsplit("#", 1)[-1]) for name, term in row.items())
        for row in emission.rows
    )


def final_rows(query: str, pushes: list[Push], mode: str, dialect: str | None = None) -> Counter:
    """Γ after the last push (RSTREAM's last emission)."""
    emissions = run(query, pushes, mode=mode, r2s="RSTREAM", dialect=dialect)
    return rows(emissions[-1])


def bag(*matches: dict[str, str]) -> Counter:
    return Counter(frozenset(match.items()) for match in matches)


def alert(stream: str, time: int, subject: str, alert_iri: str) -> Push:
    return Push(stream, time, f"<{EX}{subject}> <{VSS}hasAlert> <{alert_iri}> .")


# --------------------------------------------------------------------------- the spec's queries


@pytest.mark.parametrize("mode", MODES)
def test_loss_of_control_matches_the_three_alerts_in_order(mode) -> None:
    stream = STREAM_BASE + "VehicleSignals"
    speed, aggressive, braking = (VSS + a for a in ("HighSpeedAlert", "AggressiveDrivingAlert", "HardBrakingAlert"))
    pushes = [
        alert(stream, 1_000, "x1", aggressive),  # before any high speed: starts nothing
        alert(stream, 2_000, "h1", speed),
        alert(stream, 3_000, "a1", aggressive),
        alert(stream, 3_000, "h2", speed),  # simultaneous with a1: does not precede it
        alert(stream, 4_000, "b1", braking),
        alert(stream, 30_000, "b2", braking),  # h1 and a1 left the 20 s window by then
    ]
    # CQELS-QL 2.0 (REGISTER QUERY … AS): [RANGE 20s] tumbles from the first event (§3.1), so the
    # window [1 s, 21 s) holds h1 → a1 → b1 and is reported once, at its close, when b2 arrives.
    emissions = run(PREFIXES + SPEC["s7-seq"], pushes, mode=mode, r2s="RSTREAM")
    assert [(e.time, rows(e)) for e in emissions] == [(21_000, bag({"v": "h1"}))]
    # CQELS 1: evaluated at every event over the last 20 s.
    emissions = run(PREFIXES + SPEC["s7-seq"], pushes, mode=mode, r2s="RSTREAM", dialect="cqels")
    assert [rows(e) for e in emissions] == [
        bag(), bag(), bag(), bag(), bag({"v": "h1"}), bag(),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_overheat_then_stall(mode) -> None:
    stream = STREAM_BASE + "MachineSignals"
    overheat, stall = EX + "OverheatAlert", EX + "StallAlert"
    pushes = [
        Push(stream, 0, f"<{EX}o1> <{EX}hasAlert> <{overheat}> ."),
        Push(stream, 5_000, f"<{EX}s1> <{EX}hasAlert> <{stall}> ."),
        Push(stream, 6_000, f"<{EX}o2> <{EX}hasAlert> <{overheat}> ."),
        Push(stream, 9_000, f"<{EX}s2> <{EX}hasAlert> <{stall}> ."),
    ]
    # o1 precedes s1 and s2, o2 only s2: one row per match. In CQELS-QL 2.0 the [RANGE 30s] window
    # tumbles (§3.1): [0 s, 30 s) holds every alert and is reported at its close.
    emissions = run(PREFIXES + SPEC["s12-cep-negated-gap"], pushes, mode=mode, r2s="RSTREAM", advance_to=30_000)
    assert [(e.time, rows(e)) for e in emissions] == [(30_000, bag({"e1": "o1"}, {"e1": "o1"}, {"e1": "o2"}))]
    assert final_rows(PREFIXES + SPEC["s12-cep-negated-gap"], pushes, mode, dialect="cqels") == bag(
        {"e1": "o1"}, {"e1": "o1"}, {"e1": "o2"}
    )


# --------------------------------------------------------------------------- gap guards (§7)

# §7: "NOT turns the step into a negated gap — 'this must not occur between the previous and next
# events'", and "FILTERs referencing variables from several events … become guards". A guard tying
# the NOT step to the others restricts which events must not occur: an overheat, later a stall of
# the same machine, and no cooldown *of the same machine* between them.
MACHINE_STREAM = STREAM_BASE + "MachineSignals"
SAME_MACHINE = {
    # The issue's query: the guard reads the step before the gap (?m2 = ?m1).
    "guard on the step before": "FILTER(?m2 = ?m1 && ?m3 = ?m1)",
    # The same with the gap tied to the step after it.
    "guard on the step after": "FILTER(?m3 = ?m1) FILTER(?m2 = ?m3)",
}


def machine_query(steps: str, condition: str, shared: bool = False) -> str:
    m1, m2, m3 = ("?m", "?m", "?m") if shared else ("?m1", "?m2", "?m3")
    return f"""{PREFIXES}SELECT ?v ?stall
FROM STREAM MachineSignals [RANGE 30s]
WHERE {{
  ?e1 ex:hasAlert ex:Overheat ; ex:machine {m1} .
  ?e2 ex:hasAlert ex:Cooldown ; ex:machine {m2} .
  ?e3 ex:hasAlert ex:Stall ; ex:machine {m3} .
  FILTER(SEQ({steps}))
  {condition}
  BIND(?e1 AS ?v) BIND(?e3 AS ?stall)
}}"""


def machine_alert(time: int, subject: str, alert_name: str, machine: str) -> Push:
    return Push(MACHINE_STREAM, time, f"<{EX}{subject}> <{EX}hasAlert> <{EX}{alert_name}> ; <{EX}machine> <{EX}{machine}> .")


COOLDOWNS = [
    machine_alert(1_000, "o1", "Overheat", "press1"),
    machine_alert(2_000, "c1", "Cooldown", "press1"),  # press1 cooled down: o1 .. s1 is no match
    machine_alert(3_000, "s1", "Stall", "press1"),
    machine_alert(4_000, "o2", "Overheat", "press2"),
    machine_alert(5_000, "c2", "Cooldown", "press3"),  # another machine's cooldown: o2 .. s2 matches
    machine_alert(6_000, "s2", "Stall", "press2"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("condition", sorted(SAME_MACHINE))
def test_no_cooldown_of_the_same_machine_between(mode, condition) -> None:
    query = machine_query("?e1 ; NOT ?e2 ; ?e3", SAME_MACHINE[condition])
    assert final_rows(query, COOLDOWNS, mode) == bag({"v": "o2", "stall": "s2"})


@pytest.mark.parametrize("mode", MODES)
def test_a_variable_shared_with_the_gap_step_is_the_same_guard(mode) -> None:
    """``ex:machine ?m`` in all three steps: the gap's events are the cooldowns of the match's ?m."""
    query = machine_query("?e1 ; NOT ?e2 ; ?e3", "", shared=True).replace("SELECT ?v ?stall", "SELECT ?v ?stall ?m")
    assert final_rows(query, COOLDOWNS, mode) == bag({"v": "o2", "stall": "s2", "m": "press2"})


@pytest.mark.parametrize("mode", MODES)
def test_without_the_guard_any_cooldown_forbids(mode) -> None:
    query = machine_query("?e1 ; NOT ?e2 ; ?e3", "FILTER(?m3 = ?m1)")
    assert final_rows(query, COOLDOWNS, mode) == bag()


@pytest.mark.parametrize("mode", MODES)
def test_a_quantified_gap_counts_the_same_machine_only(mode) -> None:
    """§7's ``?e{n}``, "exactly" n: exactly two cooldowns of the overheating machine before its stall;
    the other machine's cooldown between them is not one of them."""
    pushes = [
        machine_alert(1_000, "o1", "Overheat", "press1"),
        machine_alert(2_000, "c1", "Cooldown", "press1"),
        machine_alert(3_000, "c2", "Cooldown", "press2"),
        machine_alert(4_000, "c3", "Cooldown", "press1"),
        machine_alert(5_000, "s1", "Stall", "press1"),
    ]
    query = machine_query("?e1 ; ?e2{2} ; ?e3", SAME_MACHINE["guard on the step before"])
    assert final_rows(query, pushes, mode) == bag({"v": "o1", "stall": "s1"})
    assert final_rows(query.replace("?e2{2}", "?e2{3}"), pushes, mode) == bag()


@pytest.mark.parametrize("mode", MODES)
def test_a_trailing_not_gap_retracts_on_a_cooldown_of_the_same_machine(mode) -> None:
    """``SEQ(?e1 ; NOT ?e2)``: an overheat with no cooldown of its machine after it in the window."""
    query = f"""{PREFIXES}SELECT ?v
FROM STREAM MachineSignals [RANGE 30s]
WHERE {{
  ?e1 ex:hasAlert ex:Overheat ; ex:machine ?m1 .
  ?e2 ex:hasAlert ex:Cooldown ; ex:machine ?m2 .
  FILTER(SEQ(?e1 ; NOT ?e2)) FILTER(?m2 = ?m1)
  BIND(?e1 AS ?v)
}}"""
    pushes = [
        machine_alert(1_000, "o1", "Overheat", "press1"),
        machine_alert(2_000, "c1", "Cooldown", "press2"),
        machine_alert(3_000, "c2", "Cooldown", "press1"),
        machine_alert(40_000, "o2", "Overheat", "press1"),
    ]
    emissions = run(query, pushes, mode=mode, r2s="RSTREAM")
    assert [rows(e) for e in emissions] == [bag({"v": "o1"}), bag({"v": "o1"}), bag(), bag({"v": "o2"})]


def explained(query_text: str, pushes: list[Push]) -> str:
    """``explain`` of the incremental query after ``pushes``."""
    engine = Engine()
    try:
        query = engine.register(query_text)
        for push in pushes:
            engine.push(push.stream, push.data, push.time)
        return query.explain()
    finally:
        engine.close()


def test_explain_shows_the_gap_guards() -> None:
    text = explained(machine_query("?e1 ; NOT ?e2 ; ?e3", SAME_MACHINE["guard on the step before"]), COOLDOWNS)
    assert "events matched in time order where ((?m3 = ?m1))" in text
    assert "gap NOT ?e2 [?e2 ?m2] counted where ((?m2 = ?m1))" in text
    assert "events=6 events_in=6 matches=1" in text


# --------------------------------------------------------------------------- the constructs

STREAM = EX + "s"
HEAD = f"PREFIX ex: <{EX}>\nSELECT * FROM STREAM <{STREAM}> [RANGE 1m]\nWHERE {{\n"


def event(time: int, subject: str, kind: str, value: int | None = None) -> Push:
    data = f"<{EX}{subject}> <{EX}type> <{EX}{kind}> ."
    if value is not None:
        data += f' <{EX}{subject}> <{EX}val> "{value}"^^<{XSD_INTEGER}> .'
    return Push(STREAM, time, data)


ABC = [event(1, "a1", "A", 1), event(2, "c1", "C"), event(3, "b1", "B", 1), event(4, "a2", "A", 2),
       event(5, "b2", "B", 2), event(6, "b3", "B", 3), event(7, "c2", "C")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("body", "expected"), [
    # a, then b: every a before every later b.
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b))",
     [{"a": "a1", "b": "b1"}, {"a": "a1", "b": "b2"}, {"a": "a1", "b": "b3"}, {"a": "a2", "b": "b2"},
      {"a": "a2", "b": "b3"}]),
    # no c strictly between them: c1 at 2 separates a1 from every b.
    ("?a ex:type ex:A . ?b ex:type ex:B . ?c ex:type ex:C . FILTER(SEQ(?a ; NOT ?c ; ?b))",
     [{"a": "a2", "b": "b2"}, {"a": "a2", "b": "b3"}]),
    # one c or more between them.
    ("?a ex:type ex:A . ?b ex:type ex:B . ?c ex:type ex:C . FILTER(SEQ(?a ; ?c+ ; ?b))",
     [{"a": "a1", "b": "b1"}, {"a": "a1", "b": "b2"}, {"a": "a1", "b": "b3"}]),
    # exactly two b in the rest of the window after a.
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b{2}))", [{"a": "a2"}]),
    # a per-event filter: only the a events with a value above 1.
    ("?a ex:type ex:A ; ex:val ?va . ?b ex:type ex:B . FILTER(?va > 1) FILTER(SEQ(?a ; ?b))",
     [{"a": "a2", "va": "2", "b": "b2"}, {"a": "a2", "va": "2", "b": "b3"}]),
    # a guard over two bound steps.
    ("?a ex:type ex:A ; ex:val ?v1 . ?b ex:type ex:B ; ex:val ?v2 . FILTER(?v1 = ?v2) FILTER(SEQ(?a ; ?b))",
     [{"a": "a1", "v1": "1", "b": "b1", "v2": "1"}, {"a": "a2", "v1": "2", "b": "b2", "v2": "2"}]),
    # the same as a variable shared by the two steps: a join, ?v bound once.
    ("?a ex:type ex:A ; ex:val ?v . ?b ex:type ex:B ; ex:val ?v . FILTER(SEQ(?a ; ?b))",
     [{"a": "a1", "v": "1", "b": "b1"}, {"a": "a2", "v": "2", "b": "b2"}]),
    # ... with a per-event FILTER on the later step's own variables.
    ("?a ex:type ex:A ; ex:val ?v . ?b ex:type ?kind ; ex:val ?v . FILTER(?kind = ex:B) FILTER(SEQ(?a ; ?b))",
     [{"a": "a1", "v": "1", "b": "b1", "kind": "B"}, {"a": "a2", "v": "2", "b": "b2", "kind": "B"}]),
    # a step variable in another step's event pattern: a join with that step's events.
    ("?a ex:type ex:A ; ex:val ?v . ?b ex:type ex:B . ?c ex:type ex:C ; ex:val ?b . FILTER(SEQ(?a ; ?b ; ?c))", []),
    # a guard split into its conjuncts, asked at the levels of the steps they read.
    ("?a ex:type ex:A ; ex:val ?v1 . ?b ex:type ex:B ; ex:val ?v2 . FILTER(?v1 < ?v2 && ?b != ex:b3 && ?v1 > 0) "
     "FILTER(SEQ(?a ; ?b))",
     [{"a": "a1", "v1": "1", "b": "b2", "v2": "2"}]),
    # BIND of an event variable, and a trailing NOT: no c after b in the window.
    ("?a ex:type ex:A . ?b ex:type ex:B . ?c ex:type ex:C . FILTER(SEQ(?a ; ?b ; NOT ?c)) BIND(?b AS ?last)",
     []),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b)) BIND(?a AS ?first) FILTER(?first != ex:a1)",
     [{"a": "a2", "b": "b2", "first": "a2"}, {"a": "a2", "b": "b3", "first": "a2"}]),
])
def test_seq_constructs(mode, body, expected) -> None:
    assert final_rows(HEAD + body + "\n}", ABC, mode) == bag(*expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_trailing_gap_waits_for_its_events_to_leave(mode) -> None:
    query = HEAD.replace("[RANGE 1m]", "[RANGE 5ms]") + "?a ex:type ex:A . ?c ex:type ex:C . FILTER(SEQ(?a ; NOT ?c)) }"
    pushes = [event(1, "a1", "A"), event(3, "c1", "C"), event(7, "a2", "A"), event(9, "a3", "A")]
    emissions = run(query, pushes, mode=mode, r2s="RSTREAM")
    # c1 (window 3..7] blocks a1 until a1 leaves; a2 and a3 come after c1.
    assert [rows(e) for e in emissions] == [
        bag({"a": "a1"}), bag(), bag({"a": "a2"}), bag({"a": "a2"}, {"a": "a3"}),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_stream_blocks_and_a_static_join(mode) -> None:
    """Event patterns from STREAM blocks; the group's static pattern is joined with the matches."""
    query = (
        f"PREFIX ex: <{EX}>\nSELECT ?a ?b ?label WHERE {{\n"
        f"  STREAM <{STREAM}> [RANGE 1m] {{ ?a ex:type ex:A }}\n"
        f"  STREAM <{STREAM}> [RANGE 1m] {{ ?b ex:type ex:B ; ex:val ?v }}\n"
        "  ?a ex:label ?label FILTER(?v >= 2) FILTER(SEQ(?a ; ?b))\n}"
    )
    static = f'<{EX}a1> <{EX}label> "first" . <{EX}a2> <{EX}label> "second" .'
    emissions = run(query, ABC, static=static, mode=mode, r2s="RSTREAM")
    assert rows(emissions[-1]) == bag(
        {"a": "a1", "b": "b2", "label": "first"}, {"a": "a1", "b": "b3", "label": "first"},
        {"a": "a2", "b": "b2", "label": "second"}, {"a": "a2", "b": "b3", "label": "second"},
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_directional_window_matches_per_anchor(mode) -> None:
    query = HEAD.replace("[RANGE 1m]", "[PAST 3ms FUTURE 2ms]") + (
        "?a ex:type ex:A . ?b ex:type ex:B . ?c ex:type ex:C . FILTER(SEQ(?a ; NOT ?c ; ?b)) }"
    )
    emissions = run(query, ABC, mode=mode, r2s="RSTREAM", advance_to=20)
    # Anchor a holds (a - 3, a + 2]: c1 at 2 separates a1 from every b until it leaves at anchor 5.
    both = bag({"a": "a2", "b": "b2"}, {"a": "a2", "b": "b3"})
    assert [(e.time, rows(e)) for e in emissions] == [
        (1, bag()), (2, bag()), (3, bag({"a": "a2", "b": "b2"})), (4, both), (5, both), (6, both), (7, bag()),
    ]


def test_dictionary_references_are_released() -> None:
    """Expired events give their terms back while the query runs (copies, duplicates and triples
    that left included), and unregistering gives back the rest."""
    engine = Engine()
    engine.register(
        HEAD.replace("[RANGE 1m]", "[RANGE 2ms]")
        + "?a ex:type ex:A ; ex:val ?va . ?b ex:type ex:B . FILTER(?va > 0) FILTER(SEQ(?a ; ?b)) }",
        name="q",
    )
    for time in range(60):
        kind = "AB"[time % 2]
        engine.push(STREAM, f'<{EX}e{time}> <{EX}type> <{EX}{kind}> . <{EX}e{time}> <{EX}val> "{time}"^^<{XSD_INTEGER}> .', time)
        engine.push(STREAM, f"<{EX}e{time}> <{EX}type> <{EX}{kind}> .", time)  # a copy of a timed triple
    # The windows hold the events of times 58 and 59: their subjects and values, the IRIs of the
    # query's constants and xsd:integer (nothing of the 58 events that left).
    assert len(engine.dictionary) <= 2 * 2 + 5
    engine.unregister("q")
    assert len(engine.dictionary) == 0


def test_explain_shows_the_seq_operator_and_its_counters() -> None:
    text = explained(HEAD + "?a ex:type ex:A . ?b ex:type ex:B . ?c ex:type ex:C . FILTER(SEQ(?a ; NOT ?c ; ?b)) }", ABC)
    assert "SEQ(?a ; NOT ?c ; ?b) [?a ?b]" in text
    assert "gap NOT ?c [?c]" in text
    assert "events=7 events_in=7 matches=2" in text


# --------------------------------------------------------------------------- located errors

ERRORS = [
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(NOT ?a ; ?b*))", "SEQ(NOT", "at least one plain step"),
    ("?a ex:type ex:A . FILTER(SEQ(?a ; ?b))", "?b))", "must be the subject of a triple pattern read from a stream"),
    ("?a ex:type ex:A ; ex:val ?w . ?c ex:type ex:C ; ex:val ?v . ?d ex:type ex:D ; ex:val ?u . "
     "FILTER(?v < ?w && ?v = ?u) FILTER(SEQ(?a ; NOT ?c ; ?d*))", "?v = ?u)", "reads the gap steps ?c and ?d"),
    ("?a ex:type ex:A . ?c ex:type ex:C ; ex:val ?v . ?x ex:limit ?lim . FILTER(?v < ?lim) FILTER(SEQ(?a ; NOT ?c))",
     "?v < ?lim)", "reads the gap step ?c of SEQ and ?lim, which no bound step's event patterns bind"),
    ("?a ex:type ex:A ; ex:val ?w . ?c ex:type ex:C ; ex:val ?v . FILTER(?v = ?w && NOT EXISTS { ?c ex:p ?w }) "
     "FILTER(SEQ(?a ; NOT ?c))", "NOT EXISTS", "reads the gap step ?c of SEQ inside EXISTS"),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b) && true)", "SEQ(?a ; ?b) &&", "whole condition of a FILTER"),
    ("?a ex:type ex:A . ?b ex:type ex:B . BIND(SEQ(?a ; ?b) AS ?x)", "SEQ(?a ; ?b) AS", "whole condition of a FILTER"),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b AS ?z))", "?b AS", "AS in a SEQ step"),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b ; ?a))", "?a))", "two steps of this SEQ"),
    ("?a ex:type ex:A . ?c ex:type ex:C . ?c ex:val ?v . ?d ex:type ex:D . ?d ex:val ?v . FILTER(SEQ(?a ; NOT ?c ; ?d*))",
     "?d ex:val ?v", "?v is in the event patterns of the gap steps ?c and ?d of SEQ and of no bound step"),
    ("?a ex:type ex:A . ?a ex:next ?c . ?c ex:type ex:C . FILTER(SEQ(?a ; ?c*))", "?a ex:next ?c",
     "?c is the gap step ?c of SEQ, whose events are not bound in a match"),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; NOT ?b+))", "NOT ?b+", "NOT takes no quantifier"),
    ("?a ex:type ex:A . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b)) FILTER(SEQ(?b ; ?a))", "FILTER(SEQ(?b", "one FILTER(SEQ"),
    ("?a ex:p/ex:q ?x . ?b ex:type ex:B . FILTER(SEQ(?a ; ?b))", "?a ex:p/ex:q", "plain predicate"),
]


@pytest.mark.parametrize(("body", "at", "message"), ERRORS, ids=[e[2] for e in ERRORS])
def test_seq_checks_are_located_errors(body, at, message) -> None:
    text = HEAD + body + "\n}"
    engine = Engine()
    try:
        with pytest.raises(QuerySyntaxError, match=re.escape(message)) as raised:
            engine.register(text)
    finally:
        engine.close()
    assert text[raised.value.span.start :].startswith(at)
    assert "^" in str(raised.value)


def test_seq_in_having_is_a_located_error() -> None:
    text = HEAD.replace("SELECT *", "SELECT ?a") + "?a ex:type ex:A . ?b ex:type ex:B }\nGROUP BY ?a ?b HAVING(SEQ(?a ; ?b))"
    with pytest.raises(QuerySyntaxError, match="whole condition of a FILTER") as raised:
        Engine().register(text)
    assert text[raised.value.span.start :].startswith("SEQ(?a ; ?b))")


# --------------------------------------------------------------------------- property test

KINDS = ("A", "B", "C")
# SEQ shapes: (variable, quantifier, type); a quantifier "" is a bound step, "NOT" a NOT gap.
SHAPES = (
    (("a", "", "A"), ("b", "", "B")),
    (("a", "", "A"), ("c", "NOT", "C"), ("b", "", "B")),
    (("a", "", "A"), ("c", "+", "C"), ("b", "", "B")),
    (("a", "", "A"), ("b", "{2}", "B")),
    (("c", "*", "C"), ("a", "", "A"), ("b", "?", "B")),
    (("c", "NOT", "C"), ("a", "", "A")),
    (("a", "", "A"), ("c", "{1,2}", "C"), ("b", "", "B")),
    (("a", "", "A"), ("b", "", "B"), ("c", "", "C")),
    (("a", "", "A"), ("c", "?", "C"), ("b", "+", "B"), ("d", "", "A")),
    (("a", "", "A"), ("b", "{0,1}", "B"), ("c", "{1}", "C"), ("d", "", "A")),
)
BOUNDS = {"": (1, 1), "NOT": (0, 0), "+": (1, None), "*": (0, None), "?": (0, 1), "{2}": (2, 2), "{1,2}": (1, 2),
          "{0,1}": (0, 1), "{1}": (1, 1)}
WINDOWS = ("[RANGE 3ms]", "[RANGE 6ms]", "[TRIPLES 3]", "[TRIPLES 6]")


# Gap guards: a gap step's value against a bound step's (before or after the gap).
GAP_OPS = {"=": int.__eq__, "!=": int.__ne__, "<": int.__lt__, ">=": int.__ge__}


@dataclass(frozen=True)
class GapGuards:
    """The gap guards of a case: ``guards``, ``(gap step, bound step, op)`` FILTERs on their values
    (written with the bound guard in one ``&&`` FILTER when ``together``); ``shared``, a gap step
    whose event patterns read a bound step's value variable (the same term: a join)."""

    guards: tuple[tuple[str, str, str], ...] = ()
    together: bool = False
    shared: tuple[str, str] | None = None


@st.composite
def cep_cases(draw):
    shape = draw(st.sampled_from(SHAPES))
    window = draw(st.sampled_from(WINDOWS))
    bound = [var for var, quantifier, _ in shape if not quantifier]
    gaps = [var for var, quantifier, _ in shape if quantifier]
    # Per-event filters (a step's value above a threshold), a guard over two bound steps (maybe a
    # conjunction, split over two levels) and the value variable shared by the first two bound steps.
    filters = draw(st.lists(st.tuples(st.sampled_from([var for var, _, _ in shape]), st.integers(0, 2)), max_size=2))
    guard = draw(st.sampled_from(("", "<=", "!=", "<= &&"))) if len(bound) >= 2 else ""
    shared = len(bound) >= 2 and draw(st.booleans())
    gap_guards = GapGuards()
    if gaps:
        pairs = st.tuples(st.sampled_from(gaps), st.sampled_from(bound), st.sampled_from(sorted(GAP_OPS)))
        joined = draw(st.none() | st.tuples(st.sampled_from(gaps), st.sampled_from(bound)))
        # A gap step sharing a bound step's value variable has no value of its own to compare.
        tied = tuple(pair for pair in draw(st.lists(pairs, max_size=2)) if joined is None or pair[0] != joined[0])
        gap_guards = GapGuards(tied, draw(st.booleans()), joined)
    times, time = [], 0
    for _ in range(draw(st.integers(1, 12))):
        time += draw(st.sampled_from((0, 0, 1, 2)))  # ties are frequent
        times.append(time)
    events = [
        (t, draw(st.integers(0, 3)), draw(st.sampled_from(KINDS)), draw(st.integers(0, 3))) for t in times
    ]
    return shape, window, filters, guard, events, shared, gap_guards


def value_vars(shape, shared: bool, gap_guards: GapGuards = GapGuards()) -> dict[str, str]:
    """The value variable of each step: ``v<step>``, the first bound step's for the second when
    shared, and a bound step's for a gap step sharing it."""
    names = {var: f"v{var}" for var, _, _ in shape}
    if shared:
        first, second = [var for var, quantifier, _ in shape if not quantifier][:2]
        names[second] = names[first]
    if gap_guards.shared:
        gap, bound = gap_guards.shared
        names[gap] = names[bound]
    return names


def guard_text(guard: str, names: list[str]) -> str:
    """The FILTER of ``guard`` over the value variables of the bound steps ``names``."""
    if guard == "<= &&":
        return f"FILTER(?{names[0]} <= ?{names[1]} && ?{names[-1]} != 1)"
    return f"FILTER(?{names[0]} {guard} ?{names[1]})"


def cep_query(shape, window, filters, guard, shared: bool = False, gap_guards: GapGuards = GapGuards()) -> str:
    names = value_vars(shape, shared, gap_guards)
    patterns = " ".join(f"?{var} ex:type ex:{kind} ; ex:val ?{names[var]} ." for var, _, kind in shape)
    steps = " ; ".join(
        f"NOT ?{var}" if quantifier == "NOT" else f"?{var}{quantifier}" for var, quantifier, _ in shape
    )
    conditions = " ".join(f"FILTER(?{names[var]} > {threshold})" for var, threshold in filters)
    bound = [var for var, quantifier, _ in shape if not quantifier]
    tied = [f"?{names[gap]} {op} ?{names[var]}" for gap, var, op in gap_guards.guards]
    if guard and tied and gap_guards.together:
        conditions += " " + guard_text(guard, [names[var] for var in bound]).removesuffix(")") + " && " + " && ".join(tied) + ")"
    else:
        if guard:
            conditions += " " + guard_text(guard, [names[var] for var in bound])
        conditions += "".join(f" FILTER({text})" for text in tied)
    return (
        f"PREFIX ex: <{EX}>\nSELECT * FROM STREAM <{STREAM}> {window}\n"
        f"WHERE {{ {patterns} {conditions} FILTER(SEQ({steps})) }}"
    )


def cep_data(subject: int, kind: str, value: int) -> str:
    return f'<{EX}s{subject}> <{EX}type> <{EX}{kind}> . <{EX}s{subject}> <{EX}val> "{value}"^^<{XSD_INTEGER}> .'


def oracle(shape, window, filters, guard, events, shared: bool = False, gap_guards: GapGuards = GapGuards()) -> list[Counter]:
    """Γ after each push, by brute force: each pattern's window simulated from the pushes (a set of
    timed triples, each named by the arrival of the copy that brought it in), the events of each
    step at each (subject, time), the matches of ``all_matches`` over them (a shared value variable:
    the guard of equal values, the variable once in the row; a gap step's: which of its events
    count, as its guards)."""
    names = value_vars(shape, shared, gap_guards)
    patterns = [("type", kind) for _, _, kind in shape] + [("val", None)]
    copies: list[list[tuple[int, tuple, int]]] = [[] for _ in patterns]  # (arrival, triple, t)
    leaves: list[dict[tuple, int]] = [{} for _ in patterns]  # (triple, t) → arrival of its leaf copy
    size = int(window.split()[1].rstrip("ms]"))
    spec = SeqSpec(tuple(SeqStep(not q, *BOUNDS[q]) for _, q, _ in shape))
    results = []
    for arrival, (tau, subject, kind, value) in enumerate(events):
        for triple in ((subject, "type", kind), (subject, "val", value)):
            for index, (predicate, obj) in enumerate(patterns):
                if triple[1] == predicate and obj in (None, triple[2]):
                    copies[index].append((arrival, triple, tau))
                    leaves[index].setdefault((triple, tau), arrival)
        for index in range(len(patterns)):
            kept = [c for c in copies[index] if c[2] > tau - size] if "RANGE" in window else copies[index][-size:]
            present = {(triple, t) for _, triple, t in kept}
            leaves[index] = {key: leaf for key, leaf in leaves[index].items() if key in present}
            copies[index] = kept
        found = []  # (order, step, t, binding)
        for step, (var, _quantifier, _kind) in enumerate(shape):
            values = leaves[len(shape)]
            for (type_triple, t), type_leaf in leaves[step].items():
                for (value_triple, t2), value_leaf in values.items():
                    if t2 != t or value_triple[0] != type_triple[0]:
                        continue
                    v = value_triple[2]
                    # A filter on a shared value variable filters each step reading it (the same
                    # matches as the engine's, which filters the one step keeping it).
                    if any(names[f_var] == names[var] and not v > threshold for f_var, threshold in filters):
                        continue
                    order = (max(type_leaf, value_leaf), (type_leaf, value_leaf))
                    found.append((order, step, t, {var: f"s{type_triple[0]}", names[var]: str(v)}))
        found.sort(key=lambda event: event[0])
        bound = [step for step, (_, quantifier, _) in enumerate(shape) if not quantifier]

        passes = _guard(guard, shared, [names[shape[step][0]] for step in bound], found)
        counted = _gap_guards(shape, names, gap_guards, found)
        entries = [(step, key, t) for key, (_o, step, t, _b) in enumerate(found)]
        matches = all_matches(spec, entries, passes, gap_guards=counted)
        gamma: Counter = Counter()
        for keys, count in matches.items():
            row = frozenset(item for key in keys for item in found[key][3].items())
            gamma[row] += count
        results.append(gamma)
    return results


def _guard(guard: str, shared: bool, names: list[str], found: list):
    """The guard of ``guard_text`` (and the equal values of a shared variable) on the keys of a
    match, ``names`` the bound steps' value variables (None: no guard)."""
    if not guard and not shared:
        return None

    def passes(keys: tuple[int, ...]) -> bool:
        values = [int(found[key][3][name]) for name, key in zip(names, keys)]
        if shared and values[0] != values[1]:
            return False
        if guard == "<= &&":
            return values[0] <= values[1] and values[-1] != 1
        return not guard or (values[0] <= values[1] if guard == "<=" else values[0] != values[1])

    return passes


def _gap_guards(shape, names: dict[str, str], gap_guards: GapGuards, found: list) -> dict:
    """``all_matches``' gap guards: per gap step, its tests against bound steps' values (the shared
    value variable's: equal values) at the level of the last bound step they read."""
    steps = [var for var, _, _ in shape]
    bound = [var for var, quantifier, _ in shape if not quantifier]
    tests: dict[str, list] = {}
    for gap, var, op in gap_guards.guards:
        tests.setdefault(gap, []).append((bound.index(var), GAP_OPS[op]))
    if gap_guards.shared:
        gap, var = gap_guards.shared
        tests.setdefault(gap, []).append((bound.index(var), int.__eq__))

    def value(key: int) -> int:
        return int(found[key][3][names[steps[found[key][1]]]])

    def counts(pairs):
        return lambda keys, key: all(op(value(key), value(keys[at])) for at, op in pairs)

    return {steps.index(gap): (max(at for at, _ in pairs) + 1, counts(pairs)) for gap, pairs in tests.items()}


def short(row: dict) -> frozenset:
    return frozenset((name, term.value.rsplit("/", 1)[-1]) for name, term in row.items())


@settings(ORACLE_SETTINGS, max_examples=80)
@given(cep_cases())
def test_both_modes_agree_with_the_brute_force_oracle(case) -> None:
    shape, window, filters, guard, events, shared, gap_guards = case
    query = cep_query(shape, window, filters, guard, shared, gap_guards)
    expected = oracle(shape, window, filters, guard, events, shared, gap_guards)
    engine = Engine()
    try:
        registered = {mode: engine.register(query, name=mode, mode=mode, r2s="RSTREAM") for mode in MODES}
        for step, (time, subject, kind, value) in enumerate(events):
            engine.push(STREAM, cep_data(subject, kind, value), time)
            for mode, q in registered.items():
                assert Counter(short(row) for row in q.snapshot()) == expected[step], (mode, step, query)
    finally:
        engine.close()
    # ISTREAM and DSTREAM too, every emission of both modes compared.
    check(Scenario(query, events=[["push", STREAM, t, cep_data(s, k, v)] for t, s, k, v in events]))


def test_the_oracle_can_tell_a_wrong_answer() -> None:
    """The oracle is no tautology: a NOT gap it ignores changes its answer."""
    shape = SHAPES[1]
    events = [(0, 0, "A", 0), (1, 1, "C", 0), (2, 2, "B", 0)]
    assert oracle(shape, "[RANGE 6ms]", [], "", events)[-1] == Counter()
    assert oracle(SHAPES[0], "[RANGE 6ms]", [], "", events)[-1] == Counter(
        {frozenset({("a", "s0"), ("va", "0"), ("b", "s2"), ("vb", "0")}): 1}
    )


def test_product_of_events_is_per_subject_and_time() -> None:
    """Two values of one subject at one time make two events (one per combination)."""
    query = cep_query(SHAPES[0], "[RANGE 6ms]", [], "")
    pushes = [Push(STREAM, 1, cep_data(0, "A", 1) + f' <{EX}s0> <{EX}val> "2"^^<{XSD_INTEGER}> .'),
              Push(STREAM, 2, cep_data(1, "B", 0))]
    for mode in MODES:
        assert final_rows(query, pushes, mode) == bag(
            {"a": "s0", "va": "1", "b": "s1", "vb": "0"}, {"a": "s0", "va": "2", "b": "s1", "vb": "0"}
        )


@pytest.mark.parametrize("mode", MODES)
def test_events_named_by_blank_nodes_match_in_both_modes(mode: str) -> None:
    """Blank-node events (the usual shape of a pushed reading) with a per-event FILTER; the
    re-evaluation keeps them as the store's blank nodes, and a GRAPH ?g sees none of its graphs."""
    query = f"""{PREFIXES}SELECT ?a ?b ?level (COUNT(?g) AS ?graphs)
FROM STREAM <{EX}s> [RANGE 20s]
WHERE {{
  ?a ex:hasAlert ex:OverheatAlert ; ex:level ?level .
  ?b ex:hasAlert ex:StallAlert .
  FILTER(?level > 2)
  FILTER(SEQ(?a ; ?b))
  OPTIONAL {{ GRAPH ?g {{ ?x ?p ?o }} }}
}} GROUP BY ?a ?b ?level"""
    pushes = [
        Push(f"{EX}s", 1_000, f"_:hot <{EX}hasAlert> <{EX}OverheatAlert> ; <{EX}level> 3 ."),
        Push(f"{EX}s", 2_000, f"_:mild <{EX}hasAlert> <{EX}OverheatAlert> ; <{EX}level> 1 ."),
        Push(f"{EX}s", 3_000, f"_:stall <{EX}hasAlert> <{EX}StallAlert> ."),
    ]
    (emission,) = [e for e in run(query, pushes, mode=mode, r2s="ISTREAM") if e.rows]
    (row,) = emission.rows
    assert (row["level"].value, row["graphs"].value) == ("3", "0")
    assert type(row["a"]).__name__ == type(row["b"]).__name__ == "BlankNode"
