"""The example queries of the CQELS-QL 2.0 specification (../shared/reference/cqels-ql-2/CQELS-QL_SPEC.md,
MIT), sections 1–9 and 12, Cypher (§10) excluded, as test data.

Each entry: a name (section and what it shows), the query text, and what registering it on an
``Engine()`` gives: ``None`` (it registers and runs) or what its located ``QuerySyntaxError`` says
(the spec refuses these too, or leaves them unexecuted). The spec's snippets use
prefixes they never declare (``ex:``, ``vss:``, ``:``): ``PREFIXES`` declares them, as SPARQL
requires. Fragments (a lone ``FROM STREAM`` line, a window from a table) are completed into the
smallest query that shows them.
"""

from __future__ import annotations

PREFIXES = """PREFIX ex: <http://example.org/>
PREFIX vss: <https://covesa.global/vss#>
PREFIX : <http://example.org/windows#>
PREFIX cqfn: <urn:cqels:fn:>
"""


def _from_stream(stream: str, window: str) -> str:
    return f"SELECT ?s ?o\nFROM STREAM {stream} {window}\nWHERE {{ ?s ex:value ?o }}"


EXAMPLES: list[tuple[str, str, str | None]] = [
    ("s1-register-query", """REGISTER QUERY HighTemperature AS
SELECT ?sensor ?temp
FROM STREAM Sensors [NOW]
WHERE { STREAM Sensors { ?sensor ex:temperature ?temp . } FILTER(?temp > 30) }""", None),
    # §2: FROM STREAM with each backward window.
    ("s2-from-stream-now", _from_stream("SensorData", "[NOW]"), None),
    ("s2-from-stream-range", _from_stream("Events", "[RANGE 10s]"), None),
    ("s2-from-stream-range-step", _from_stream("Events", "[RANGE 1h STEP 5m]"), None),
    ("s2-from-stream-slide-step", _from_stream("Trades", "[SLIDE 30s STEP 10s]"), None),
    ("s2-from-stream-triples", _from_stream("DataStream", "[TRIPLES 100]"), None),
    # §3.1: the table of backward windows (the others are in §2).
    ("s3-1-range-step", _from_stream("Events", "[RANGE 10s STEP 5s]"), None),
    ("s3-1-days", _from_stream("Events", "[RANGE 1d STEP 1h]"), None),
    # §3.2: directional (LARS) windows, EMIT and LATENESS.
    ("s3-2-past", _from_stream("Events", "[PAST 10s]"), None),
    ("s3-2-future", _from_stream("Events", "[FUTURE 10s]"), None),
    ("s3-2-range-future", _from_stream("Events", "[RANGE 10s FUTURE 5s]"), None),
    ("s3-2-past-future", _from_stream("Events", "[PAST 10s FUTURE 5s]"), None),
    ("s3-2-triples-past-future", _from_stream("Events", "[TRIPLES PAST 5 FUTURE 3]"), None),
    ("s3-2-future-emit-lateness", """SELECT ?r ?speed
FROM STREAM VehicleSignals [FUTURE 20s STEP 1s EMIT ON_CLOSE LATENESS 2s]
WHERE { ?r vss:Speed ?speed }""", None),
    ("s3-2-range-lateness", """SELECT ?sensor (COUNT(*) AS ?n)
FROM STREAM Sensors [RANGE 10s LATENESS 2s]
WHERE { ?sensor ex:temperature ?t }
GROUP BY ?sensor""", None),
    ("s3-2-emit-early-and-final", _from_stream("Events", "[PAST 10s FUTURE 5s EMIT EARLY_AND_FINAL]"), None),
    ("s3-2-emit-on-update", _from_stream("Events", "[RANGE 10s EMIT ON_UPDATE]"),
     "EMIT in [RANGE 10s EMIT ON_UPDATE] applies to directional windows"),
    # §4: a STREAM block reading its FROM STREAM window, and implicit stream binding.
    ("s4-stream-block", """SELECT ?message ?person ?tag
FROM STREAM MessageStream [RANGE 10s]
WHERE {
  STREAM MessageStream {
    ?message ex:hasCreator ?person ;
             ex:hasTag     ?tag .
  }
}""", None),
    ("s4-implicit-binding", """SELECT ?r ?speed ?vehicle
FROM STREAM VehicleSignals [RANGE 5s]
WHERE {
  ?r vss:Speed   ?speed .
  ?r vss:Vehicle ?vehicle .
}""", None),
    # §5: named windows (they execute here).
    ("s5-named-windows", """SELECT ?r ?recent ?baseline
FROM NAMED WINDOW :short ON SensorData [RANGE 10s]
FROM NAMED WINDOW :long  ON SensorData [RANGE 60s]
WHERE {
  WINDOW :short { ?r ex:value ?recent . }
  WINDOW :long  { ?r ex:value ?baseline . }
}""", None),
    # §6: stream–static composition.
    ("s6-static-lookup", """SELECT ?req ?person ?firstName ?city
FROM STREAM Requests [NOW]
FROM <http://example.org/graph> WITH DEPTH 2 CACHE 5m
WHERE {
  STREAM Requests { ?req ex:personIri ?person . }
  ?person ex:firstName ?firstName ;
          ex:city      ?city .
}""", None),
    ("s6-static-keyword", """SELECT ?req ?firstName
FROM STREAM Requests [NOW]
FROM STATIC <http://example.org/graph>
WHERE { STREAM Requests { ?req ex:personIri ?person . } ?person ex:firstName ?firstName }""", None),
    ("s6-from-named-options", """SELECT ?req ?g
FROM STREAM Requests [NOW]
FROM NAMED <http://example.org/graph> WITH DEPTH 1 CACHE 1m
WHERE { STREAM Requests { ?req ex:personIri ?person . } GRAPH ?g { ?person ex:firstName ?n } }""", None),
    # §7: complex event processing.
    ("s7-seq", """REGISTER QUERY LossOfControl AS
SELECT ?v
FROM STREAM VehicleSignals [RANGE 20s]
WHERE {
  ?e1 vss:hasAlert vss:HighSpeedAlert .
  ?e2 vss:hasAlert vss:AggressiveDrivingAlert .
  ?e3 vss:hasAlert vss:HardBrakingAlert .
  FILTER(SEQ(?e1 ; ?e2 ; ?e3))
  BIND(?e1 AS ?v)
}""", None),
    ("s7-seq-quantifiers", """SELECT ?v
FROM STREAM VehicleSignals [RANGE 20s]
WHERE {
  ?e1 vss:hasAlert vss:HighSpeedAlert .
  ?e2 vss:hasAlert vss:AggressiveDrivingAlert .
  ?e3 vss:hasAlert vss:HardBrakingAlert .
  ?e4 vss:hasAlert vss:StallAlert .
  FILTER(SEQ(?e1+ ; NOT ?e2 ; ?e3{2,5} ; ?e4? ; ?e2* ; ?e3{3} AS ?last))
  BIND(?e1 AS ?v)
}""", "AS in a SEQ step"),
    ("s7-seq-projection", """SELECT ?v
FROM STREAM Alerts [RANGE 30s]
WHERE { ?e1 ex:hasAlert ex:A . ?e2 ex:hasAlert ex:B . FILTER(SEQ(?e1 ; ?e2)) BIND(?e1 AS ?v) }""", None),
    # §8: the stream output operators.
    ("s8-rstream", """REGISTER RSTREAM Everything AS
SELECT ?s ?o FROM STREAM Events [RANGE 10s] WHERE { ?s ex:value ?o }""", None),
    ("s8-istream", """REGISTER ISTREAM Arrivals AS
SELECT ?s ?o FROM STREAM Events [RANGE 10s] WHERE { ?s ex:value ?o }""", None),
    ("s8-dstream", """REGISTER DSTREAM Departures AS
SELECT ?s ?o FROM STREAM Events [RANGE 10s] WHERE { ?s ex:value ?o }""", None),
    # §9: standard SPARQL over a stream.
    ("s9-sparql-features", """REGISTER QUERY Features AS
SELECT DISTINCT ?sensor (GROUP_CONCAT(?room; SEPARATOR=", ") AS ?rooms) (COUNT(?t) AS ?n)
FROM STREAM Readings [RANGE 1m]
FROM <http://example.org/graph>
WHERE {
  STREAM Readings { ?sensor ex:temperature ?t . OPTIONAL { ?sensor ex:unit ?unit } }
  { ?sensor ex:room ?room } UNION { ?sensor ex:zone ?room }
  FILTER NOT EXISTS { ?sensor ex:disabled true }
  FILTER(?t >= 0 && BOUND(?room))
  BIND(STR(?sensor) AS ?name)
}
GROUP BY ?sensor
HAVING(?n > 1)
ORDER BY DESC(?n)
LIMIT 10""", None),
    ("s9-minus", """SELECT ?s
FROM STREAM Events [RANGE 10s]
FROM <http://example.org/graph>
WHERE { STREAM Events { ?s ex:value ?o } MINUS { ?s ex:hidden true } }""", None),
    # §12: worked examples.
    ("s12-windowed-aggregation", """REGISTER QUERY PerSensorStats AS
SELECT ?sensor (AVG(?t) AS ?avg) (MAX(?t) AS ?peak) (COUNT(*) AS ?n)
FROM STREAM Readings [RANGE 3s]
WHERE { STREAM Readings { ?sensor ex:temperature ?t . } }
GROUP BY ?sensor""", None),
    ("s12-stream-static-lookup", """REGISTER QUERY EnrichRequests AS
SELECT ?person ?firstName ?city
FROM STREAM Requests [NOW]
FROM <http://example.org/graph> WITH DEPTH 1 CACHE 5m
WHERE {
  STREAM Requests { ?req ex:personIri ?person . }
  ?person ex:firstName ?firstName ; ex:city ?city .
}""", None),
    ("s12-named-windows", """REGISTER QUERY SpeedVsBaseline AS
SELECT ?vehicle ?recent ?baseline
FROM NAMED WINDOW :short ON VehicleSignals [RANGE 5s]
FROM NAMED WINDOW :long  ON VehicleSignals [RANGE 60s]
WHERE {
  WINDOW :short { ?vehicle vss:Speed ?recent . }
  WINDOW :long  { ?vehicle vss:Speed ?baseline . }
}""", None),
    ("s12-cep-negated-gap", """REGISTER QUERY OverheatThenStall AS
SELECT ?e1
FROM STREAM MachineSignals [RANGE 30s]
WHERE {
  ?e1 ex:hasAlert ex:OverheatAlert .
  ?e2 ex:hasAlert ex:StallAlert .
  FILTER(SEQ(?e1 ; ?e2))
}""", None),
]
