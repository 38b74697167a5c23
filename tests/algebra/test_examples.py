"""Every example query parses, translates and optimises, and its static/stream split is as reasoned.

For each query the expected split is spelled out: which stream patterns (stream, window, triples)
and which static caches (join variables, pattern). Why each split is right is noted per query.
"""

from __future__ import annotations

import pytest
from paths import ROOT

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import optimize, to_algebra, to_sexpr
from cqels_endpoint.algebra.passes.split_static import streams_and_caches
from cqels_endpoint.algebra.sexpr import Printer
from cqels_endpoint.query.windows import NowWindow, RangeWindow, TriplesWindow

EXAMPLES = ROOT / "examples" / "queries"

RFID = "http://deri.org/streams/rfid"
TRIPS = "http://debs2015.org/streams/trips"

# name → (stream patterns: (stream, window, window name, triples)), (caches: (join vars, pattern))
EXPECTED_SPLITS = {
    # The person's name is static and shares only ?person with the stream; the floorplan shares
    # only ?loc: two caches, since they have no variable in common.
    "conference-q1-location": (
        [(RFID, NowWindow(), None, ["?person lv:detectedAt ?loc"])],
        [
            (
                ["?loc"],
                "(graph lv:\n"
                "  (bgp\n"
                "    (triple ?loc lv:name ?locName)\n"
                "    (triple ?loc lv:desc ?locDesc)))",
            ),
            (["?person"], '(bgp (triple ?person foaf:name "Alice Smith"))'),
        ],
    ),
    # Two windows on one stream; the connectivity of rooms joins both on ?loc1 and ?loc2.
    "conference-q2-reachable": (
        [
            (RFID, NowWindow(), None, ["?person1 lv:detectedAt ?loc1"]),
            (RFID, RangeWindow(3_000), None, ["?person2 lv:detectedAt ?loc2"]),
        ],
        [(["?loc1", "?loc2"], "(graph lv:\n  (bgp (triple ?loc1 lv:connected ?loc2)))")],
    ),
    # The co-author group is static and connected through ?paper; FILTER (?auth != ?coAuth) reads
    # only its variables and is pushed into it, so the cache holds co-author pairs already filtered.
    "conference-q3-coauthors": (
        [
            (RFID, TriplesWindow(1), None, ["?auth lv:detectedAt ?loc"]),
            (RFID, RangeWindow(5_000), None, ["?coAuth lv:detectedAt ?loc"]),
        ],
        [
            (
                ["?auth", "?coAuth"],
                "(filter (!= ?auth ?coAuth)\n"
                "  (bgp\n"
                "    (triple ?paper dc:creator ?auth)\n"
                "    (triple ?paper dc:creator ?coAuth)\n"
                '    (triple ?auth foaf:name "Alice Smith")\n'
                "    (triple ?coAuth foaf:name ?coAuthName)))",
            )
        ],
    ),
    # The floorplan (?loc1, ?loc2) and the paper/proceedings/editor chain (?paper, ?proceeding,
    # ?editor, ?auth, ?editorName) share no variable: two caches. The chain meets the streams on
    # ?auth and ?editor; ?editorName is only projected, so it is no join variable.
    "conference-q4-editors": (
        [
            (RFID, TriplesWindow(1), None, ["?auth lv:detectedAt ?loc1"]),
            (RFID, RangeWindow(15_000), None, ["?editor lv:detectedAt ?loc2"]),
        ],
        [
            (["?loc1", "?loc2"], "(graph lv:\n  (bgp (triple ?loc1 lv:connected ?loc2)))"),
            (
                ["?auth", "?editor"],
                "(bgp\n"
                "  (triple ?paper dc:creator ?auth)\n"
                "  (triple ?paper dcterms:partOf ?proceeding)\n"
                "  (triple ?proceeding swrc:editor ?editor)\n"
                "  (triple ?editor foaf:name ?editorName)\n"
                '  (triple ?auth foaf:name "Alice Smith"))',
            ),
        ],
    ),
    # As q3 plus the floorplan; the split happens below the GROUP BY, whose keys (?loc2, ?locName)
    # are not join variables of the caches.
    "conference-q5-coauthor-count": (
        [
            (RFID, TriplesWindow(1), None, ["?auth lv:detectedAt ?loc1"]),
            (RFID, RangeWindow(30_000), None, ["?coAuth lv:detectedAt ?loc2"]),
        ],
        [
            (
                ["?loc2", "?loc1"],
                "(graph lv:\n"
                "  (bgp\n"
                "    (triple ?loc2 lv:name ?locName)\n"
                "    (triple ?loc2 lv:connected ?loc1)))",
            ),
            (
                ["?auth", "?coAuth"],
                "(filter (!= ?auth ?coAuth)\n"
                "  (bgp\n"
                "    (triple ?paper dc:creator ?auth)\n"
                "    (triple ?paper dc:creator ?coAuth)\n"
                '    (triple ?auth foaf:name "Alice Smith")))',
            ),
        ],
    ),
    # Only a stream: nothing static to cache.
    "debs-q1-frequent-routes": (
        [
            (
                TRIPS,
                RangeWindow(1_800_000),
                None,
                ["?trip :pickLon ?pLon", "?trip :pickLat ?pLat", "?trip :dropLon ?dLon", "?trip :dropLat ?dLat"],
            )
        ],
        [],
    ),
    # Two stream sub-selects, the second with a stream pattern inside NOT EXISTS (printed first:
    # a filter's expression comes before its input). Nothing static.
    "debs-q2-profitable-areas": (
        [
            (
                TRIPS,
                RangeWindow(900_000),
                None,
                ["?trip :fare ?fare", "?trip :tip ?tip", "?trip :pickLat ?pLat1", "?trip :pickLon ?pLon1"],
            ),
            (TRIPS, RangeWindow(1_800_000), None, ["?trip3 :taxi ?taxi", "?trip3 :pickupTime ?pickup"]),
            (
                TRIPS,
                RangeWindow(1_800_000),
                None,
                ["?trip2 :dropLat ?dLat2", "?trip2 :dropLon ?dLon2", "?trip2 :taxi ?taxi", "?trip2 :dropoffTime ?dropoff"],
            ),
        ],
        [],
    ),
    # The connectivity of locations is static (default graph) and joins both windows.
    "localisation-reachable": (
        [
            ("http://example.org/streams/loc", NowWindow(), None, ["?p1 :detectedAt ?l1"]),
            ("http://example.org/streams/loc", RangeWindow(3), None, ["?p2 :detectedAt ?l2"]),
        ],
        [(["?l1", "?l2"], "(bgp (triple ?l1 :conn ?l2))")],
    ),
    # The template of the stored-query examples (?person is its parameter, an ordinary variable in
    # the query): one stream block of two patterns, the floorplan names joined on ?loc.
    "template-where-is": (
        [(RFID, RangeWindow(3_000), None, ["?person lv:detectedAt ?loc", "?other lv:detectedAt ?loc"])],
        [(["?loc"], "(graph lv:\n  (bgp (triple ?loc lv:name ?locName)))")],
    ),
    # RSP-QL windows: three stream patterns from FROM NAMED WINDOW, nothing static.
    "rspql-hourly-rate": (
        [
            ("http://debs2015.org/streams/fare", TriplesWindow(1000), ":w1", ["?trans :fare ?fare", "?trans :pickupTime ?pTime"]),
            (
                "http://debs2015.org/streams/pickup",
                RangeWindow(7_200_000, 300_000),
                ":w2",
                ["?ride :taxi ?taxi", "?ride :pickupTime ?pTime"],
            ),
            ("http://debs2015.org/streams/dropoff", RangeWindow(3_600_000, 300_000), ":w3", ["?ride :tripTime ?tripTime"]),
        ],
        [],
    ),
}


def test_every_example_has_an_expected_split():
    assert {p.stem for p in EXAMPLES.glob("*.rq")} == set(EXPECTED_SPLITS)


@pytest.mark.parametrize("name", sorted(EXPECTED_SPLITS))
def test_example_split(name: str):
    query = parse_query((EXAMPLES / f"{name}.rq").read_text(encoding="utf-8"))
    optimised = optimize(to_algebra(query))
    printer = Printer(dict(optimised.prefixes))
    streams, caches = streams_and_caches(optimised.pattern)
    found_streams = [
        (
            s.stream.value,
            s.window,
            None if s.window_name is None else printer.iri(s.window_name),
            [" ".join(printer.term(t) for t in (x.subject, x.predicate, x.object)) for x in s.triples],
        )
        for s in streams
    ]
    found_caches = [([printer.term(v) for v in c.join_vars], to_sexpr(c.pattern, printer.prefixes)) for c in caches]
    expected_streams, expected_caches = EXPECTED_SPLITS[name]
    assert found_streams == expected_streams
    assert found_caches == expected_caches


def test_register_prefix_reaches_the_algebra():
    query = to_algebra(parse_query((EXAMPLES / "rspql-hourly-rate.rq").read_text(encoding="utf-8")))
    assert query.register is not None and query.register.kind == "RSTREAM"
    assert query.form == "SELECT"
