"""GSP PUT replacing a large graph: `cqels serve` against Oxigraph server, same run.

    python benchmarks/gsp_put.py [--triples 100000] [--shared 0.5] [--runs 3] [--oxigraph PATH] [--out FILE]

Each server starts on an empty directory (loopback, the servers and Oxigraph CLI of
``endpoint.py``); a first PUT creates ``<urn:put:g>`` with ``--triples`` triples, then ``--runs``
PUTs replace it, alternately with a version sharing the fraction ``--shared`` of its triples and
the first one again (so each replace removes and adds the rest of the graph). Measured: the wall time of each replacing PUT
(request sent to response read), its median per server, and their ratio. After every PUT the graph
must hold exactly ``--triples`` triples, checked by a COUNT query on both servers.

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


def measure(tools: endpoint.Tools, name: str, store: Path, triples: int, shared: float, runs: int) -> list[float]:
    bodies = [version(triples, 0), version(triples, round(triples * (1 - shared)))]
    path = "/store?" + urllib.parse.urlencode({"graph": GRAPH})
    with endpoint.started(tools, name, store, max_body_mb=endpoint.GSP_MAX_BODY_MB) as server:
        client = endpoint.Client(server.port)
        seconds = []
        for run in range(runs + 1):
            status, body, elapsed = client.send("PUT", path, bodies[run % 2], {"Content-Type": "application/n-triples"})
            if status not in (200, 201, 204):
                raise SystemExit(f"{name}: PUT {endpoint.describe(status, body)}")
            status, body, _ = client.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{GRAPH}> {{ ?s ?p ?o }} }}")
            if status != 200 or endpoint.count_answer(body) != triples:
                raise SystemExit(f"{name}: the graph does not hold {triples} triples after a PUT: {endpoint.describe(status, body)}")
            if run:  # the first PUT creates the graph
                seconds.append(elapsed)
        client.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--triples", type=int, default=100_000)
    parser.add_argument("--shared", type=float, default=0.5, help="fraction of the triples two versions share")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--oxigraph", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    oxigraph = endpoint.oxigraph_binary(args.oxigraph)
    with tempfile.TemporaryDirectory(prefix="gsp-put-") as work_dir:
        work = Path(work_dir)
        (work / "logs").mkdir()
        tools = endpoint.Tools(Path(sys.executable).parent / "cqels", oxigraph, work / "logs", False)
        results = {name: measure(tools, name, work / name, args.triples, args.shared, args.runs) for name in endpoint.SERVERS}
    title = (f"# GSP PUT replacing a {args.triples:,}-triple graph by one sharing {args.shared:.0%} of it: "
             f"cqels vs Oxigraph server {endpoint.tool_version(oxigraph)}")
    endpoint.write_against_oxigraph(title, "| server | replacing PUTs (s) | median (s) |", "{}", results, args.out)


if __name__ == "__main__":
    main()
