"""The demo behind ``cqels serve --demo``: the conference scenario's static data, and a continuous
query fed by a looping demo stream (``DemoStream``).

``examples/data/`` holds the floor plan (named graph ``<http://deri.org/floorplan/>``, TriG) and
the people, papers and proceedings (default graph, Turtle) that the conference example queries of
``examples/queries/`` join their RFID streams with. It lives in the source checkout, not in the
installed package.
"""

from __future__ import annotations

import logging
import shlex
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from cqels_endpoint.errors import CqelsError, LateEventError
from static_store import StaticStore

if TYPE_CHECKING:
    from cqels_endpoint.engine import Engine
    from cqels_endpoint.engine.registry import QueryRegistry

log = logging.getLogger("cqels_endpoint.http")

DEMO_DIR = Path(__file__).resolve().parents[2] / "examples" / "data"
DEMO_SUFFIXES = (".trig", ".ttl", ".nt", ".nq", ".rdf", ".jsonld")
FLOORPLAN = "http://deri.org/floorplan/"


def demo_files(directory: Path = DEMO_DIR) -> list[Path]:
    if not directory.is_dir():
        msg = f"--demo needs the demo data of a source checkout, and {directory} is missing"
        raise CqelsError(msg)
    return sorted(p for p in directory.iterdir() if p.suffix in DEMO_SUFFIXES)


def load_demo(store: StaticStore, directory: Path = DEMO_DIR) -> int | None:
    """Load the demo files into an empty store; the number of quads loaded, None if not empty.

    A store that already holds data (the demo loaded by an earlier start, or the user's own
    data) is left alone, so restarting with ``--demo`` changes nothing.
    """
    files = demo_files(directory)
    if len(store) > 0:
        return None
    for path in files:
        store.load(path)
    return len(store)


def curl_examples(base_url: str, auth_token: str | None = None) -> str:
    """Ready-to-paste ``curl`` commands against a server at ``base_url``."""
    query = (
        "PREFIX lv: <http://deri.org/floorplan/> "
        "SELECT ?name ?desc WHERE { GRAPH lv: { ?room lv:name ?name ; lv:desc ?desc } } ORDER BY ?name"
    )
    # The token itself is never printed (terminals end up in logs); the command reads it from the shell.
    auth = ' -H "Authorization: Bearer $CQELS_AUTH_TOKEN"' if auth_token else ""
    mine = "http://example.org/my-graph"
    turtle = '<http://example.org/alice> <http://xmlns.com/foaf/0.1/knows> <http://example.org/bob> .'
    lines = [
        "# rooms of the floor plan, as SPARQL JSON (try -H 'Accept: text/csv')",
        f"curl -s {base_url}/query --data-urlencode {shlex.quote('query=' + query)}",
        "# the floor plan graph as Turtle (Graph Store Protocol)",
        f"curl -s '{base_url}/store?graph={quote(FLOORPLAN, safe='')}' -H 'Accept: text/turtle'",
        "# create (PUT) a graph of your own, then count its triples"
        + (" (writes need the token: export CQELS_AUTH_TOKEN=...)" if auth_token else ""),
        f"curl -s -X PUT '{base_url}/store?graph={quote(mine, safe='')}'{auth}"
        f" -H 'Content-Type: text/turtle' --data-binary {shlex.quote(turtle)}",
        f"curl -s {base_url}/query -H 'Accept: text/csv'"
        f" --data-urlencode {shlex.quote(f'query=SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{mine}> {{ ?s ?p ?o }} }}')}",
        "# liveness, quads and store version",
        f"curl -s {base_url}/health",
    ]
    return "\n".join(lines)


# The demo's continuous side: a query over a stream of its own, fed by a looping walk of the
# conference's people through the floor plan. Its own stream, not the examples' rfid stream: the
# demo's events carry arrival times, and on <http://deri.org/streams/rfid> they would make a
# newcomer's own pushes at small times (the README's tour pushes at 1000 ms) late.
DEMO_STREAM = "http://deri.org/streams/rfid-demo"
DEMO_QUERY_NAME = "demo"
DEMO_QUERY = f"""\
# cqels serve --demo: who was seen in which room in the last 5 seconds, over the demo's looping
# RFID stream (stopped by the first push of your own).
PREFIX lv: <{FLOORPLAN}>
PREFIX foaf: <http://xmlns.com/foaf/0.1/>
SELECT ?name ?room
WHERE {{
  STREAM <{DEMO_STREAM}> [RANGE 5s] {{ ?person lv:detectedAt ?loc }}
  GRAPH lv: {{ ?loc lv:name ?room }}
  ?person foaf:name ?name .
}}
"""
DEMO_INTERVAL_S = 0.5
PEOPLE = ("alice", "bob", "carol", "dave", "erin")  # conference.ttl's people
# A closed walk over lv:connected rooms; each person walks it from a different room.
ROUTE = ("lobby", "mainHall", "corridor", "room101", "room102", "corridor", "kitchen", "corridor")


def demo_event(number: int) -> str:
    """The N-Triples of the demo stream's event ``number``: the people take turns, each one room
    further along ``ROUTE`` than at their previous turn.

    >>> demo_event(0)
    '<http://deri.org/people/alice> <http://deri.org/floorplan/detectedAt> <http://deri.org/floorplan/lobby> .'
    >>> demo_event(6)
    '<http://deri.org/people/bob> <http://deri.org/floorplan/detectedAt> <http://deri.org/floorplan/room101> .'
    """
    turn, who = divmod(number, len(PEOPLE))
    room = ROUTE[(turn + 2 * who) % len(ROUTE)]
    return f"<http://deri.org/people/{PEOPLE[who]}> <{FLOORPLAN}detectedAt> <{FLOORPLAN}{room}> ."


def _pushes(engine: Engine) -> int:
    """Every push the engine has counted on any stream, accepted or refused."""
    return sum(s["events"] + s["late"] + s["future"] + s["malformed"] for s in engine.stream_stats())


class DemoStream:
    """A background thread that stores the demo query (``DEMO_QUERY_NAME``, unless a query of that
    name is stored already) and pushes ``demo_event``s on ``DEMO_STREAM`` through the engine every
    ``interval_s``, at their arrival time, looping.

    It stops for good on ``stop()`` (once that returns it pushes nothing more) and by itself when
    a push it did not make reaches the engine, on any stream, whichever way it came (``POST
    /streams``, ``cqels push``, ``Engine.push`` from Python): before each of its pushes it compares
    the engine's push counters with its own, so a real push is never followed by a demo event
    beyond one made in the same instant.
    """

    def __init__(self, registry: QueryRegistry, interval_s: float = DEMO_INTERVAL_S):
        self.registry = registry
        self.engine = registry.engine
        self.interval_s = interval_s
        self.pushed = 0
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # held across each check-and-push, and by stop()
        self._seen = 0
        self._thread = threading.Thread(target=self._run, name="cqels-demo-stream", daemon=True)

    def start(self) -> None:
        self._seen = _pushes(self.engine)  # a push from now on, even during registration, stops it
        self._thread.start()

    def stop(self) -> None:
        # Taking the lock waits for a push under way, never for a registration (a Spark cache
        # build may take seconds): the thread checks the flag under the lock before every push.
        with self._lock:
            self._stopped.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stopped.is_set()

    def _run(self) -> None:
        try:
            if DEMO_QUERY_NAME not in self.registry.stored:
                self.registry.put(DEMO_QUERY_NAME, DEMO_QUERY, None, "incremental")
        except Exception as error:  # a demo that cannot start must not stop the server
            if not self._stopped.is_set():
                log.warning("the demo query did not start (%s); the demo stream stays off", error)
            return
        while not self._stopped.wait(self.interval_s):
            with self._lock:
                if self._stopped.is_set():
                    return
                if _pushes(self.engine) != self._seen:
                    log.info("a push arrived: the demo stream on <%s> stops", DEMO_STREAM)
                    self._stopped.set()
                    return
                try:
                    self.engine.push(DEMO_STREAM, demo_event(self.pushed))
                except LateEventError as error:  # its clock, kept from an earlier run, is ahead of ours
                    log.warning("demo event refused: %s", error)
                self._seen += 1  # accepted or refused, the engine counted it
                self.pushed += 1
