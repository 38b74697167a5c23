"""The demo dataset behind ``cqels serve --demo``: the conference scenario's static data.

``examples/data/`` holds the floor plan (named graph ``<http://deri.org/floorplan/>``, TriG) and
the people, papers and proceedings (default graph, Turtle) that the conference example queries of
``examples/queries/`` join their RFID streams with. It lives in the source checkout, not in the
installed package.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import quote

from cqels_endpoint.errors import CqelsError
from cqels_endpoint.static_store import StaticStore

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
