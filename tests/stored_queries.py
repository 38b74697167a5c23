"""Helpers of the stored-query tests (test_http_queries, test_query_instances, test_persistence,
test_instance_groups, test_templates): the floorplan template, the text of an instance, RFID
events, pushing them over HTTP and collecting emissions."""

from __future__ import annotations

import json
import random
import urllib.parse
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.engine import ContinuousQuery, Emission
from cqels_endpoint.query.parser import parse_query

ROOT = Path(__file__).resolve().parents[1]
FLOORPLAN = ROOT / "examples" / "data" / "floorplan.trig"
Q1 = (ROOT / "examples" / "queries" / "conference-q1-location.rq").read_text()
Q2 = (ROOT / "examples" / "queries" / "conference-q2-reachable.rq").read_text()
LV = "http://deri.org/floorplan/"
RFID = "http://deri.org/streams/rfid"
ROOMS = ["lobby", "mainHall", "corridor", "room101", "room102", "kitchen"]

# Where a given person is, with the names of the rooms and everybody seen there in the last 3 s
# (a template: its parameter ?person is declared by a "# @param" line).
TEMPLATE = (ROOT / "examples" / "queries" / "template-where-is.rq").read_text()


def person(i: int) -> str:
    return f"http://example.org/person/{i}"


def substituted(template: str, iri: str) -> str:
    """The template with ``?person`` replaced by ``<iri>`` (and its @param line dropped): the
    query an instance must behave like."""
    lines = [line for line in template.splitlines() if "@param" not in line]
    return "\n".join(lines).replace("?person", f"<{iri}>") + "\n"


def values_first(template: str, terms: dict[str, ox.NamedNode | ox.Literal]) -> str:
    """The template with ``terms`` pre-bound by a one-row VALUES written first in its WHERE group:
    the text of an instance, registered on its own as the oracle of what the engine's binding of
    the template's algebra must answer. The @param lines stay: they are comments."""
    where = parse_query(template).form.where.span.start
    variables = " ".join(f"?{name}" for name in terms)
    row = " ".join(str(term) for term in terms.values())
    return f"{template[: where + 1]} VALUES ({variables}) {{ ({row}) }} {template[where + 1 :]}"


def rfid_events(count: int, people: int, seed: int = 7, start: int = 1_000) -> list[tuple[int, str]]:
    """``count`` detections ``(time ms, N-Triples)`` of random people in random rooms, 0–900 ms apart."""
    rng = random.Random(seed)
    events, time = [], start
    for _ in range(count):
        time += rng.randrange(0, 900)
        who, room = person(rng.randrange(people)), ROOMS[rng.randrange(len(ROOMS))]
        events.append((time, f"<{who}> <{LV}detectedAt> <{LV}{room}> .\n"))
    return events


def ndjson(events: list[tuple[int, str]]) -> str:
    return "".join(json.dumps({"time": time, "data": data}) + "\n" for time, data in events)


def push(live, events: list[tuple[int, str]], headers: dict | None = None):
    """POST the events to the RFID stream as one NDJSON batch; returns the response."""
    return live.post(
        "/streams/" + urllib.parse.quote(RFID, safe=""),
        body=ndjson(events),
        headers={"Content-Type": "application/x-ndjson", **(headers or {})},
    )


def collect(query: ContinuousQuery) -> list[Emission]:
    seen: list[Emission] = []
    query.subscribe(seen.append)
    return seen


def normalised(emissions: list[Emission]) -> list[tuple]:
    """Emissions comparable across queries: time, R2S and the bag of rows (or triples/boolean)."""
    result = []
    for e in emissions:
        if e.rows is not None:
            content = sorted(tuple(sorted((k, str(v)) for k, v in row.items())) for row in e.rows)
        elif e.triples is not None:
            content = sorted(str(t) for t in e.triples)
        else:
            content = e.boolean
        result.append((e.time, e.r2s, content))
    return result


def sparql_query(live, name: str, text: str, **params) -> object:
    return live.put(f"/queries/{name}", body=text, params=params or None,
                    headers={"Content-Type": "application/sparql-query"})


def floorplan_ntriples() -> str:
    """The one named graph of the floorplan TriG, as N-Triples (GSP writes one graph at a time)."""
    quads = ox.parse(FLOORPLAN.read_bytes(), ox.RdfFormat.TRIG)
    return "".join(f"{q.subject} {q.predicate} {q.object} .\n" for q in quads if q.graph_name == ox.NamedNode(LV))


def floorplan_endpoint(endpoint_factory):
    """A live server (local cache engine, immediate rebuilds) holding the floorplan graph."""
    live = endpoint_factory(cache_engine="local", rebuild_debounce_ms=0)
    load_floorplan(live)
    return live


def engine_of(live):
    """The continuous engine of a live server's app."""
    from cqels_endpoint.http.context import endpoint

    return endpoint(live.app).engine


def load_floorplan(live, headers: dict | None = None) -> None:
    """PUT the floorplan graph through the Graph Store Protocol."""
    response = live.put("/store", params=[("graph", LV)], body=floorplan_ntriples(),
                        headers={"Content-Type": "application/n-triples", **(headers or {})})
    assert response.status in (201, 204), response.text
