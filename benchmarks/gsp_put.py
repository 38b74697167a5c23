"""GSP PUT replacing a large graph: `cqels serve` against Oxigraph server, same run.

    python benchmarks/gsp_put.py [--triples 100000] [--shared 0.5] [--runs 3] [--update TEXT] [--oxigraph PATH] [--out FILE]

Each server starts on an empty directory (loopback, the servers and Oxigraph CLI of
``endpoint.py``); a first PUT creates ``<urn:put:g>`` with ``--triples`` triples, then ``--runs``
PUTs replace it, alternately with a version sharing the fraction ``--shared`` of its triples and
the first one again (so each replace removes and adds the rest of the graph). Measured: the wall time of each replacing PUT
(request sent to response read), its median per server, and their ratio. After every PUT the graph
must hold exactly ``--triples`` triples, checked by a COUNT query on both servers.

With ``--update TEXT`` the PUTs are not timed: after each one the SPARQL Update ``TEXT`` is sent to
``/update`` and timed instead (e.g. ``COPY <urn:put:g> TO <urn:put:c> ; DROP GRAPH <urn:put:g>``); the
quads of the whole store after each Update must be as many on both servers.

Run it against the baseline by putting its checkout first on ``PYTHONPATH`` (the server
subprocess inherits it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import urllib.parse
from pathlib import Path

import endpoint

GRAPH = "urn:put:g"


def version(triples: int, offset: int) -> bytes:
    return "".join(f'<urn:put:s{i}> <urn:put:p{i % 7}> "value {i}" .\n'
                   for i in range(offset, offset + triples)).encode()


def measure(
    tools: endpoint.Tools, name: str, store: Path, triples: int, shared: float, runs: int, update: str | None
) -> tuple[list[float], list[int]]:
    """The seconds of each timed request, and the store's quads after each Update (none without one)."""
    bodies = [version(triples, 0), version(triples, round(triples * (1 - shared)))]
    path = "/store?" + urllib.parse.urlencode({"graph": GRAPH})
    with endpoint.started(tools, name, store, max_body_mb=endpoint.GSP_MAX_BODY_MB) as server:
        client = endpoint.Client(server.port)
        seconds, sizes = [], []
        for run in range(runs + 1):
            status, body, elapsed = client.send("PUT", path, bodies[run % 2], {"Content-Type": "application/n-triples"})
            if status not in (200, 201, 204):
                raise SystemExit(f"{name}: PUT {endpoint.describe(status, body)}")
            status, body, _ = client.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{GRAPH}> {{ ?s ?p ?o }} }}")
            if status != 200 or endpoint.count_answer(body) != triples:
                raise SystemExit(f"{name}: the graph does not hold {triples} triples after a PUT: {endpoint.describe(status, body)}")
            if update is not None:
                status, body, elapsed = client.update(update)
                if status not in (200, 204):
                    raise SystemExit(f"{name}: Update {endpoint.describe(status, body)}")
                status, body, _ = client.query("SELECT (COUNT(*) AS ?n) WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
                sizes.append(endpoint.count_answer(body))
            if run or update is not None:  # the first PUT creates the graph
                seconds.append(elapsed)
        client.close()
    return seconds, sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--triples", type=int, default=100_000)
    parser.add_argument("--shared", type=float, default=0.5, help="fraction of the triples two versions share")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--update", help="a SPARQL Update timed after each (untimed) PUT")
    parser.add_argument("--oxigraph", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    oxigraph = endpoint.oxigraph_binary(args.oxigraph)
    with tempfile.TemporaryDirectory(prefix="gsp-put-") as work_dir:
        work = Path(work_dir)
        (work / "logs").mkdir()
        tools = endpoint.Tools(Path(sys.executable).parent / "cqels", oxigraph, work / "logs", False)
        measured = {name: measure(tools, name, work / name, args.triples, args.shared, args.runs, args.update)
                    for name in endpoint.SERVERS}
    if len({tuple(sizes) for _, sizes in measured.values()}) > 1:
        raise SystemExit(f"the servers' stores differ after the Updates: {measured}")
    results = {name: seconds for name, (seconds, _) in measured.items()}
    if args.update is None:
        title = (f"# GSP PUT replacing a {args.triples:,}-triple graph by one sharing {args.shared:.0%} of it: "
                 f"cqels vs Oxigraph server {endpoint.tool_version(oxigraph)}")
        header = "| server | replacing PUTs (s) | median (s) |"
    else:
        title = (f"# SPARQL Update `{args.update}` after a GSP PUT of a {args.triples:,}-triple graph: "
                 f"cqels vs Oxigraph server {endpoint.tool_version(oxigraph)}")
        header = "| server | Updates (s) | median (s) |"
    endpoint.write_against_oxigraph(title, header, "{}", results, args.out)


if __name__ == "__main__":
    main()
