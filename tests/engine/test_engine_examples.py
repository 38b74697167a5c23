"""The localisation and conference examples of examples/queries/ on small hand-made streams, over
the demo data of examples/data/, with expectations computed by hand (the oracle checked against
hand-computed truth). Timestamps in ms."""

from __future__ import annotations

import pyoxigraph as ox
from paths import ROOT

from cqels_endpoint.testing import Advance, Push, run

QUERIES = ROOT / "examples" / "queries"
LV = "http://deri.org/floorplan/"
PEOPLE = "http://deri.org/people/"
RFID = "http://deri.org/streams/rfid"


def query(name: str) -> str:
    return (QUERIES / name).read_text()


def seen(who: str, room: str, time: int) -> Push:
    return Push(RFID, time, f"<{PEOPLE}{who}> <{LV}detectedAt> <{LV}{room}> .")


def values(emission, var):
    return sorted(row[var].value for row in emission.rows)


def test_localisation_reachable():
    static = """@prefix : <http://example.org/loc#> .
        :r1 :conn :r2 . :r2 :conn :r1 . :r2 :conn :r3 ."""
    loc = "http://example.org/streams/loc"

    def at(who, room, time):
        return Push(loc, time, f"<http://example.org/loc#{who}> <http://example.org/loc#detectedAt> <http://example.org/loc#{room}> .")

    events = [at("ann", "r1", 1), at("bob", "r2", 2), at("cat", "r3", 3), at("eve", "r2", 4), at("dan", "r1", 8)]
    emissions = run(query("localisation-reachable.rq"), events, static=static)
    # t=2: bob (NOW, r2) reaches ann (r1 in (−1,2]); t=3: r3 connects to nothing;
    # t=4: eve (r2) reaches cat (r3 in (1,4]) but not ann (t=1 left); t=8: dan alone.
    assert [(e.time, e.to_ntriples()) for e in emissions] == [
        (2, "<http://example.org/loc#bob> <http://example.org/loc#reaches> <http://example.org/loc#ann> .\n"),
        (4, "<http://example.org/loc#eve> <http://example.org/loc#reaches> <http://example.org/loc#cat> .\n"),
    ]


def test_conference_q1_location_follows_sparql_datasets(demo_store):
    # As written the query has FROM NAMED only: its default graph is empty (SPARQL 1.1 §13.2), so
    # `?person foaf:name "Alice Smith"` never matches and nothing is emitted.
    events = [seen("alice", "room101", 1000), seen("bob", "lobby", 2000)]
    assert run(query("conference-q1-location.rq"), events, static=demo_store) == []
    # With the dataset clause removed the static default graph is read.
    text = query("conference-q1-location.rq").replace("FROM NAMED <http://deri.org/floorplan/>\n", "")
    emissions = run(text, [*events, seen("alice", "kitchen", 3000)], static=demo_store)
    assert [(e.time, values(e, "locName"), values(e, "locDesc")) for e in emissions] == [
        (1000, ["Room 101"], ["Semantic Web track, 60 seats"]),
        (3000, ["Kitchen"], ["Lunch is served here"]),
    ]


def test_conference_q2_reachable(demo_store):
    events = [seen("bob", "room101", 0), seen("alice", "corridor", 1000), seen("carol", "lobby", 5000)]
    emissions = run(query("conference-q2-reachable.rq"), events, static=demo_store)
    # t=1000: alice (NOW, corridor) and bob (room101 in the 3 s window) are in connected rooms;
    # t=5000: the window (2000,5000] holds carol alone.
    assert [(e.time, e.to_ntriples()) for e in emissions] == [
        (1000, f"<{PEOPLE}alice> <{LV}reachable> <{PEOPLE}bob> .\n"),
    ]


def test_conference_q3_coauthors(demo_store):
    events = [
        seen("bob", "room101", 0),
        seen("alice", "room101", 1000),  # Alice is the last detection: co-author Bob is in her room
        seen("carol", "room101", 2000),  # TRIPLES 1 now holds Carol's detection: Γ empty
        seen("alice", "room101", 3000),  # Alice again: Bob (0) and Carol (2000) are in the 5 s window
        Advance(6000),  # Bob's detection (0) has left (0 ≤ 6000 − 5000)
    ]
    istream = run(query("conference-q3-coauthors.rq"), events, static=demo_store)
    assert [(e.time, values(e, "coAuthName")) for e in istream] == [
        (1000, ["Bob Jones"]),
        (3000, ["Bob Jones", "Carol White"]),
    ]
    dstream = run(query("conference-q3-coauthors.rq"), events, static=demo_store, r2s="DSTREAM")
    assert [(e.time, values(e, "coAuthName")) for e in dstream] == [(2000, ["Bob Jones"]), (6000, ["Bob Jones"])]


def test_conference_q4_editors(demo_store):
    events = [seen("dave", "mainHall", 0), seen("erin", "kitchen", 1000), seen("alice", "lobby", 2000), seen("alice", "corridor", 20_000)]
    emissions = run(query("conference-q4-editors.rq"), events, static=demo_store, r2s="RSTREAM")
    # t=2000: Alice in the lobby, which connects to the main hall where Dave (editor of ISWC 2011,
    # where Alice published) was seen; Erin (editor of DEBS 2016) is in the kitchen, not adjacent.
    # t=20000: Dave's and Erin's detections left the 15 s window.
    assert [(e.time, values(e, "editorName")) for e in emissions] == [(0, []), (1000, []), (2000, ["Dave Brown"]), (20_000, [])]


def test_conference_q5_coauthor_count(demo_store):
    events = [seen("bob", "room102", 0), seen("carol", "room102", 500), seen("alice", "room101", 1000)]
    emissions = run(query("conference-q5-coauthor-count.rq"), events, static=demo_store)
    # FROM NAMED alone again: the co-author sub-pattern reads the (empty) default graph.
    assert emissions == []
    text = query("conference-q5-coauthor-count.rq").replace("FROM NAMED <http://deri.org/floorplan/>\n", "")
    emissions = run(text, events, static=demo_store)
    # Alice in room101, next to room102 where both her co-authors Bob and Carol were seen.
    assert [(e.time, e.rows) for e in emissions] == [
        (
            1000,
            [
                {
                    "loc2": ox.NamedNode(LV + "room102"),
                    "locName": ox.Literal("Room 102"),
                    "noCoAuths": ox.Literal("2", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
                }
            ],
        )
    ]
