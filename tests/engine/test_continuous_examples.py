"""The conference and localisation example queries on small hand-made data: incremental == recompute.

The static data is the demo data of ``examples/data`` (the floor plan as the named graph
``lv:``, people and papers in the default graph); the RFID readings are the timeline below. Each
query runs in both modes with every R2S on one engine and must emit the same at every evaluation
time (``incremental_oracle``). The expected ISTREAM rows of each query are spelled out as well,
so a run where both modes are wrong in the same way (or silent) fails too.
"""

from __future__ import annotations

from incremental_oracle import Scenario, differences, run_both
from paths import ROOT

EXAMPLES = ROOT / "examples"
QUERIES = EXAMPLES / "queries"
LV = "http://deri.org/floorplan/"
PEOPLE = "http://deri.org/people/"
RFID = "http://deri.org/streams/rfid"
LOC = "http://example.org/loc#"
LOC_STREAM = "http://example.org/streams/loc"


def _static_nquads() -> str:
    """The demo data as N-Quads (one store, rebuilt for each engine by the oracle helper)."""
    import pyoxigraph as ox

    store = ox.Store()
    store.load(path=str(EXAMPLES / "data" / "floorplan.trig"), format=ox.RdfFormat.TRIG)
    store.load(path=str(EXAMPLES / "data" / "conference.ttl"), format=ox.RdfFormat.TURTLE)
    return store.dump(format=ox.RdfFormat.N_QUADS).decode()


def _detected(person: str, room: str) -> str:
    return f"<{PEOPLE}{person}> <{LV}detectedAt> <{LV}{room}> ."


# Seconds:  0      1      2         3         4 (two ticks)   5         9        17       18    40
# alice          lobby           corridor                   corridor  room101          corridor
# bob     lobby                            corridor
# carol                 corridor
# dave                                     mainHall
# erin                                                                           kitchen
# (lv:connected: lobby–mainHall, lobby–corridor, mainHall–corridor, corridor–room101/102/kitchen)
CONFERENCE_EVENTS = [
    ["push", RFID, 0, _detected("bob", "lobby")],
    ["push", RFID, 1000, _detected("alice", "lobby")],
    ["push", RFID, 2000, _detected("carol", "corridor")],
    ["push", RFID, 3000, _detected("alice", "corridor")],
    ["push", RFID, 4000, _detected("dave", "mainHall")],
    ["push", RFID, 4000, _detected("bob", "corridor")],
    # The same triple as at 3 s: a RANGE window holds it once (a window is a graph).
    ["push", RFID, 5000, _detected("alice", "corridor")],
    ["push", RFID, 9000, _detected("alice", "room101")],
    ["push", RFID, 17000, _detected("erin", "kitchen")],
    ["push", RFID, 18000, _detected("alice", "corridor")],
    ["advance", 40000],
]


def _istream(logs, mode: str = "recompute") -> list[tuple]:
    """The ISTREAM of one mode as sorted (time, values): a row's values by variable name, or a
    CONSTRUCT triple's (subject, object)."""
    found = []
    for emission in logs[mode, "ISTREAM"]:
        if emission.rows is not None:
            found.extend((emission.time, tuple(v.value for _, v in sorted(row.items()))) for row in emission.rows)
        else:
            found.extend((emission.time, (t.subject.value, t.object.value)) for t in emission.triples)
    return sorted(found)


def _run(name: str, static: str, events: list[list]) -> dict:
    query = (QUERIES / f"{name}.rq").read_text(encoding="utf-8")
    logs = run_both(Scenario(query, static, events))
    assert differences(logs) == []
    return logs


def test_conference_q2_reachable_people() -> None:
    """Who was seen in the last 3 s in a room connected to the room someone enters now."""
    logs = _run("conference-q2-reachable", _static_nquads(), CONFERENCE_EVENTS)
    alice, bob, carol, dave, erin = (PEOPLE + p for p in ("alice", "bob", "carol", "dave", "erin"))
    assert _istream(logs) == sorted(
        [
            (2000, (carol, bob)),  # carol in the corridor; bob (0 s) and alice (1 s) in the lobby
            (2000, (carol, alice)),
            (3000, (alice, alice)),  # alice's own lobby reading (1 s); bob's (0 s) has expired
            (4000, (dave, carol)),  # dave in the main hall; carol and alice in the corridor
            (4000, (dave, alice)),
            # The second tick at 4 s: NOW holds the instant, dave's reading and bob's (in the corridor).
            (4000, (dave, bob)),
            (4000, (bob, dave)),
            (5000, (alice, dave)),  # carol's corridor reading (2 s) has expired
            (18000, (alice, erin)),  # erin in the kitchen, next to the corridor
        ]
    )


def test_conference_q3_coauthors_in_the_room() -> None:
    """Alice's co-authors seen in the last 5 s where the latest reading (TRIPLES 1) places her."""
    logs = _run("conference-q3-coauthors", _static_nquads(), CONFERENCE_EVENTS)
    assert _istream(logs) == [
        (1000, ("Bob Jones",)),  # alice reaches the lobby, where bob is since 0 s
        (3000, ("Carol White",)),  # alice reaches the corridor, where carol is since 2 s
        (5000, ("Bob Jones",)),  # the latest reading is alice's again: bob and carol are there
        (5000, ("Carol White",)),
    ]


def test_conference_q4_editors_nearby() -> None:
    """Editors of Alice's proceedings seen in the last 15 s in a room next to hers."""
    logs = _run("conference-q4-editors", _static_nquads(), CONFERENCE_EVENTS)
    # dave edits ISWC 2011 (alice's CQELS paper), erin DEBS 2016 (alice's other paper).
    assert _istream(logs) == [
        (5000, ("Dave Brown",)),  # alice in the corridor, dave in the main hall next to it
        (18000, ("Dave Brown",)),  # alice back in the corridor: dave (4 s) and erin (17 s) next door
        (18000, ("Erin Green",)),
    ]


def test_conference_q1_reads_an_empty_default_graph() -> None:
    """Q1 names only ``FROM NAMED <lv:>``, so its default graph is empty (SPARQL 1.1 §13.2) and
    ``?person foaf:name "Alice Smith"`` matches nothing: both modes agree on silence."""
    logs = _run("conference-q1-location", _static_nquads(), CONFERENCE_EVENTS)
    assert _istream(logs) == []
    assert [e.rows for e in logs["incremental", "RSTREAM"]] == [[]] * len(logs["incremental", "RSTREAM"])




# Ticks (1 tick = 1 ms):  0    1    2    3    4    5
# p1                      l1             l2
# p2                           l2             l3
# p3                                l4             l1
# (:conn both ways: l1–l2, l2–l3, l4–l1)
LOCALISATION_EVENTS = [
    ["push", LOC_STREAM, 0, f"<{LOC}p1> <{LOC}detectedAt> <{LOC}l1> ."],
    ["push", LOC_STREAM, 1, f"<{LOC}p2> <{LOC}detectedAt> <{LOC}l2> ."],
    ["push", LOC_STREAM, 2, f"<{LOC}p3> <{LOC}detectedAt> <{LOC}l4> ."],
    ["push", LOC_STREAM, 3, f"<{LOC}p1> <{LOC}detectedAt> <{LOC}l2> ."],
    ["push", LOC_STREAM, 4, f"<{LOC}p2> <{LOC}detectedAt> <{LOC}l3> ."],
    ["push", LOC_STREAM, 5, f"<{LOC}p3> <{LOC}detectedAt> <{LOC}l1> ."],
    ["advance", 10],
]
LOCALISATION_STATIC = "\n".join(
    f"<{LOC}{a}> <{LOC}conn> <{LOC}{b}> ."
    for a, b in [("l1", "l2"), ("l2", "l1"), ("l2", "l3"), ("l3", "l2"), ("l4", "l1"), ("l1", "l4")]
)


def test_localisation_reachable() -> None:
    """Who entered a room now (NOW) next to a room someone was seen in during the last 3 ticks."""
    logs = _run("localisation-reachable", LOCALISATION_STATIC, LOCALISATION_EVENTS)
    p1, p2, p3 = LOC + "p1", LOC + "p2", LOC + "p3"
    assert _istream(logs) == [
        (1, (p2, p1)),  # p2 enters l2, next to p1's l1 (tick 0)
        (2, (p3, p1)),  # p3 enters l4, next to p1's l1 (tick 0)
        # tick 3: p1 enters l2; its l1 reading (tick 0) has left the 3-tick window: nobody
        (4, (p2, p1)),  # p2 enters l3, next to p1's l2 (tick 3)
        (5, (p3, p1)),  # p3 enters l1, next to p1's l2 (tick 3)
    ]
