"""This endpoint (``cqels serve``) against Oxigraph server, side by side, on the same data and machine.

    python benchmarks/endpoint.py [--sizes 100000,1000000] [--concurrent-seconds 30] [--runs 50]
                                  [--whole-runs 5] [--oxigraph PATH] [--skip gsp timeout ...] [--quick]

Oxigraph server is the ``oxigraph`` CLI of PyPI (``OXIGRAPH_VERSION``), installed into
``benchmarks/.oxigraph-venv`` unless ``--oxigraph`` names a binary. Both servers run on loopback,
one at a time, each from a fresh data directory; ``cqels serve`` with ``--cache-engine local
--query-timeout 30``, Oxigraph with its defaults. For each size of the generated BSBM-like
dataset (``_endpoint_data.py``, cached as N-Quads in ``benchmarks/.data/``):

- load: ``cqels load`` and ``oxigraph load`` of the N-Quads file into an empty directory, wall time;
- queries: the ten ``SHAPES`` below, 1–7 light (one product), 8–10 over the whole data, on one
  keep-alive connection: warm-up runs, then median and p90. Both servers' answers are compared
  (SPARQL JSON as a multiset of rows, N-Triples as a multiset of parsed triples);
- concurrent: after a restart, 8 client processes (not threads: one client's GIL would cap the
  rate) each on its own keep-alive connection run the light queries round-robin; q/s, p50, p99;
- updates: 1,000 sequential ``INSERT DATA`` of 3 triples on one connection, req/s;
- ``/health`` of cqels, median of 200;
- GSP: on an empty directory, the dataset ``POST``-ed to ``/store?graph=`` one named graph at a
  time as N-Triples; the server's resident memory before, right after and 5 s later, and the time;
- timeout (largest size only): with a 5 s query timeout, a runaway query in one connection while
  another looks up a product every 50 ms; when and how the runaway was refused, lookup latency.

Tables go to ``results/endpoint.md`` (and stdout), bars to ``results/endpoint.png``. Anything
that went wrong (HTTP errors, differing answers, warnings or errors in a server's log) is listed under
"Problems" with the query and the response.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version as package_version
from pathlib import Path
from string import Template

import _endpoint_data as data
import pyoxigraph

HERE = Path(__file__).resolve().parent
OXIGRAPH_VERSION = "0.5.13"
OXIGRAPH_VENV = HERE / ".oxigraph-venv"
DATA_CACHE = HERE / ".data"
SERVERS = ("cqels", "oxigraph")
QUERY_TIMEOUT_S = 30
RUNAWAY_TIMEOUT_S = 5
CLIENTS = 8
UPDATES = 1_000
HEALTH_RUNS = 200
GSP_SETTLE_S = 5
# The offers graph of 1M triples is ~80 MB of N-Triples, over cqels's default 64 MiB body limit.
GSP_MAX_BODY_MB = 1024
SPARQL_JSON = "application/sparql-results+json"
N_TRIPLES = "application/n-triples"

PREFIXES = f"""PREFIX v: <{data.VOCAB}>
PREFIX g: <{data.BENCH}graph/>
PREFIX rdfs: <{data.RDFS}>
"""


@dataclass(frozen=True)
class Shape:
    """A query shape; ``$product``, ``$label``, ``$producer`` and ``$root`` are filled per dataset."""

    number: int
    name: str
    template: str
    whole_data: bool = False
    construct: bool = False
    unordered_limit: bool = False  # LIMIT without ORDER BY: any LIMIT rows of the full answer are right

    def text(self, focus: data.Focus) -> str:
        return PREFIXES + Template(self.template).substitute(
            product=f"<{focus.product}>", label=json.dumps(focus.label), producer=f"<{focus.producer}>",
            root=f"<{data.ROOT_CLASS}>",
        )

    def full_text(self, focus: data.Focus) -> str:
        """The text without its final LIMIT, to check an ``unordered_limit`` answer against."""
        return self.text(focus).rsplit("LIMIT", 1)[0]

    @property
    def accept(self) -> str:
        return N_TRIPLES if self.construct else SPARQL_JSON


POINT_LOOKUP = Shape(1, "point lookup", "SELECT ?p ?o WHERE { GRAPH ?g { $product ?p ?o } }")
INCOMING = Shape(2, "incoming links", "SELECT ?g ?s ?p WHERE { GRAPH ?g { ?s ?p $product } }")
OPTIONAL_REVIEWS = Shape(3, "OPTIONAL", """SELECT ?review ?rating ?text WHERE {
  GRAPH g:reviews {
    ?review v:reviewFor $product
    OPTIONAL { ?review v:rating ?rating }
    OPTIONAL { ?review v:text ?text }
  }
}""")
# The star is anchored on one producer (about 20 products) rather than on a product IRI, so that
# its centre is a variable to join on.
STAR_JOIN = Shape(4, "star join", """SELECT ?product ?label ?number ?type WHERE {
  GRAPH g:products {
    ?product v:producer $producer ; rdfs:label ?label ; v:productPropertyNumeric1 ?number ; a ?type
  }
}""")
CONSTRUCT_OFFERS = Shape(5, "CONSTRUCT", """CONSTRUCT { $product v:offeredBy ?vendor . ?offer v:costs ?price } WHERE {
  GRAPH g:offers { ?offer v:product $product ; v:vendor ?vendor ; v:price ?price }
}""", construct=True)
THREE_GRAPHS = Shape(6, "3-graph join", """SELECT ?product ?offer ?vendor ?country WHERE {
  GRAPH g:products { ?product rdfs:label $label }
  GRAPH g:offers { ?offer v:product ?product ; v:vendor ?vendor }
  GRAPH g:vendors { ?vendor v:country ?country }
}""")
PRICE_RANGE = Shape(7, "FILTER range LIMIT", """SELECT ?offer ?price WHERE {
  GRAPH g:offers { ?offer v:price ?price FILTER(?price >= 5000 && ?price < 5100) }
} LIMIT 10""", unordered_limit=True)
REVIEWS_BY_TYPE = Shape(8, "GROUP BY", """SELECT ?type (COUNT(?review) AS ?reviews) (AVG(?rating) AS ?averageRating)
WHERE {
  GRAPH g:reviews { ?review v:reviewFor ?product ; v:rating ?rating }
  GRAPH g:products { ?product a ?type }
} GROUP BY ?type""", whole_data=True)
DEAREST_OFFERS = Shape(9, "ORDER BY LIMIT", """SELECT ?offer ?price WHERE {
  GRAPH g:offers { ?offer v:price ?price }
} ORDER BY DESC(?price) ?offer LIMIT 10""", whole_data=True)
PRODUCTS_OF_ROOT = Shape(10, "property path", """SELECT (COUNT(?product) AS ?products) WHERE {
  GRAPH g:products { ?product a/rdfs:subClassOf* $root }
}""", whole_data=True)
SHAPES = (POINT_LOOKUP, INCOMING, OPTIONAL_REVIEWS, STAR_JOIN, CONSTRUCT_OFFERS, THREE_GRAPHS, PRICE_RANGE,
          REVIEWS_BY_TYPE, DEAREST_OFFERS, PRODUCTS_OF_ROOT)
LIGHT = tuple(shape for shape in SHAPES if not shape.whole_data)

NEW_REVIEW = Template(PREFIXES + """INSERT DATA { GRAPH g:reviews {
  <${bench}review/new$i> v:reviewFor $product ; v:rating 7 ; v:title "new review $i"
} }""")
REVIEW_COUNT = Template(PREFIXES + "SELECT (COUNT(*) AS ?n) WHERE { GRAPH g:reviews { ?r v:reviewFor $product } }")
QUAD_COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?graph { ?s ?p ?o } }"
# Three independent scans of every graph: a cross product of (10^6)^3 rows to count.
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g1 { ?a ?b ?c } GRAPH ?g2 { ?d ?e ?f } GRAPH ?g3 { ?h ?i ?j } }"


# --- HTTP ------------------------------------------------------------------------------------


class Client:
    """One keep-alive connection to a server on loopback."""

    def __init__(self, port: int, timeout: float = 900.0):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def send(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        """(status, body, seconds) of one request, the response read to its end."""
        try:
            return self._send(method, path, body, headers or {})
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # A server may drop an idle keep-alive connection: once more on a new one.
            self.connection.close()
            return self._send(method, path, body, headers or {})

    def _send(self, method: str, path: str, body: bytes | None, headers: dict):
        started = time.perf_counter()
        self.connection.request(method, path, body, headers)
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, payload, time.perf_counter() - started

    def query(self, text: str, accept: str = SPARQL_JSON):
        return self.send("GET", "/query?" + urllib.parse.urlencode({"query": text}), headers={"Accept": accept})

    def update(self, text: str):
        return self.send("POST", "/update", text.encode(), {"Content-Type": "application/sparql-update"})

    def close(self) -> None:
        self.connection.close()


def describe(status: int, body: bytes) -> str:
    return f"HTTP {status}: {body[:400].decode('utf-8', 'replace').strip()}"


def count_answer(body: bytes) -> int:
    return int(json.loads(body)["results"]["bindings"][0]["n"]["value"])


# --- servers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tools:
    cqels: Path
    oxigraph: Path
    logs: Path
    oxigraph_timeout: bool  # whether `oxigraph serve` has --timeout-s

    def load_command(self, server: str, file: Path, store: Path) -> list[str]:
        if server == "cqels":
            return [str(self.cqels), "load", str(file), "--data-dir", str(store), "--quiet"]
        return [str(self.oxigraph), "load", "--location", str(store), "--file", str(file)]

    def serve_command(self, server: str, store: Path, port: int, timeout: int | None, max_body_mb: int | None):
        if server == "cqels":
            command = [str(self.cqels), "serve", "--host", "127.0.0.1", "--data-dir", str(store), "--port", str(port),
                       "--cache-engine", "local", "--query-timeout", str(timeout or QUERY_TIMEOUT_S)]
            return command + (["--max-body-mb", str(max_body_mb)] if max_body_mb else [])
        command = [str(self.oxigraph), "serve", "--location", str(store), "--bind", f"127.0.0.1:{port}"]
        return command + (["--timeout-s", str(timeout)] if timeout else [])


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen
    log: Path

    def rss_mb(self) -> float:
        # The cqels script runs as its shebang's python, so this PID is the server's python
        # process; the children it forks for queries with a timeout are not counted.
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmRSS for {self.name} (PID {self.process.pid})")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def started(tools: Tools, name: str, store: Path, timeout: int | None = None, max_body_mb: int | None = None):
    """A server on ``store``, answering queries; SIGTERM and waited for on exit."""
    port = free_port()
    log = tools.logs / f"{name}-{store.name}-{port}.log"
    with serving(name, tools.serve_command(name, store, port, timeout, max_body_mb), port, log) as server:
        yield server


@contextmanager
def serving(name: str, command: list[str], port: int, log: Path):
    """``command`` run as the server ``name`` on ``port`` (its output in ``log``), once it answers
    queries; SIGTERM and waited for on exit (killed after 60 s)."""
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    server = Server(name, port, process, log)
    try:
        wait_ready(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(server: Server, limit_s: float = 300.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}:\n{tail(server.log)}")
        client = Client(server.port, timeout=10)
        try:
            if client.query("ASK {}")[0] == 200:
                return
        except OSError:
            pass
        finally:
            client.close()
        time.sleep(0.1)
    raise RuntimeError(f"{server.name} did not answer within {limit_s:.0f} s:\n{tail(server.log)}")


def tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def log_errors(log: Path, limit: int = 3) -> list[str]:
    """The first lines of a server log that report a warning, an error or a traceback."""
    hits = [line for line in log.read_text(errors="replace").splitlines()
            if any(word in line for word in ("Traceback", "ERROR", "WARNING"))]
    return hits[:limit]


def oxigraph_binary(given: Path | None) -> Path:
    """The Oxigraph CLI: ``given``, or the one of ``OXIGRAPH_VENV``, installed there if missing."""
    if given is not None:
        return given
    binary = OXIGRAPH_VENV / "bin" / "oxigraph"
    if not binary.exists() or tool_version(binary) != OXIGRAPH_VERSION:
        print(f"installing oxigraph {OXIGRAPH_VERSION} into {OXIGRAPH_VENV} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(OXIGRAPH_VENV)], check=True)
        subprocess.run([str(OXIGRAPH_VENV / "bin" / "pip"), "install", "--quiet", f"oxigraph=={OXIGRAPH_VERSION}"],
                       check=True)
    return binary


def write_against_oxigraph(title: str, header: str, label: str, seconds: dict[str, list[float]], out: Path | None) -> None:
    """Prints (and writes to ``out``) a small report of each tool's run times in seconds, by tool name
    (``SERVERS``; ``label`` names a row, ``{}`` the tool), their medians and the cqels / oxigraph ratio."""
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    lines = [
        title,
        "",
        f"`{' '.join(sys.argv)}`; PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}; load average "
        f"{os.getloadavg()[0]:.2f} at the end.",
        "",
        header,
        "|---|---|---|",
        *(f"| {label.format(name)} | {', '.join(f'{s:.2f}' for s in times)} | {medians[name]:.2f} |" for name, times in seconds.items()),
        "",
        f"Median cqels / oxigraph: **{medians['cqels'] / medians['oxigraph']:.2f}×**.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        out.write_text(text)


def tool_version(binary: Path) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]


# --- answers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A query answer up to row order and blank node labels."""

    variables: tuple[str, ...]
    rows: Counter

    def within(self, other: Answer) -> bool:
        return self.variables == other.variables and self.rows <= other.rows

    def difference(self, other: Answer, limit: int = 3) -> str:
        only_here, only_there = self.rows - other.rows, other.rows - self.rows
        return (f"vars {self.variables} vs {other.variables}; {only_here.total()} rows only in cqels, e.g. "
                f"{list(only_here)[:limit]}; {only_there.total()} only in oxigraph, e.g. {list(only_there)[:limit]}")


def parse_answer(body: bytes, construct: bool) -> Answer:
    if construct:
        triples = pyoxigraph.parse(body, format=pyoxigraph.RdfFormat.N_TRIPLES)
        return Answer(("subject", "predicate", "object"), Counter(str(triple) for triple in triples))
    results = json.loads(body)
    rows = Counter(
        tuple(sorted(term(variable, value) for variable, value in binding.items()))
        for binding in results["results"]["bindings"]
    )
    return Answer(tuple(sorted(results["head"]["vars"])), rows)


def term(variable: str, value: dict) -> tuple[str, str, str, str]:
    """(variable, type, value, datatype or language) with the equivalent spellings made equal."""
    kind = "literal" if value["type"] == "typed-literal" else value["type"]
    qualifier = value.get("datatype") or value.get("xml:lang", "")
    if qualifier == data.XSD + "string":
        qualifier = ""
    return variable, kind, "_:" if kind == "bnode" else value["value"], qualifier


# --- measurements ----------------------------------------------------------------------------


@dataclass
class QueryRun:
    seconds: list[float] = field(default_factory=list)
    answer: Answer | None = None
    full_answer: Answer | None = None
    error: str | None = None


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> float:
    return 1000 * seconds


def load(tools: Tools, name: str, file: Path, store: Path) -> float:
    started_at = time.perf_counter()
    done = subprocess.run(tools.load_command(name, file, store), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name} load failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return time.perf_counter() - started_at


def measure_queries(server: Server, focus: data.Focus, warmup: int, runs: int, whole_runs: int) -> dict[int, QueryRun]:
    client = Client(server.port)
    measured = {}
    for shape in SHAPES:
        print(f"  {server.name}: query {shape.number} ({shape.name})", file=sys.stderr, flush=True)
        measured[shape.number] = measure_query(client, shape, focus, warmup, whole_runs if shape.whole_data else runs)
    client.close()
    return measured


def measure_query(client: Client, shape: Shape, focus: data.Focus, warmup: int, runs: int) -> QueryRun:
    run = QueryRun()
    text = shape.text(focus)
    for i in range(warmup + runs):
        status, body, seconds = client.query(text, shape.accept)
        if status != 200:
            run.error = describe(status, body)
            return run
        if i >= warmup:
            run.seconds.append(seconds)
    run.answer = answer_or_error(run, body, shape.construct)
    if shape.unordered_limit:
        status, body, _ = client.query(shape.full_text(focus), shape.accept)
        if status != 200:
            run.error = "without LIMIT: " + describe(status, body)
            return run
        run.full_answer = answer_or_error(run, body, shape.construct)
    return run


def answer_or_error(run: QueryRun, body: bytes, construct: bool) -> Answer | None:
    try:
        return parse_answer(body, construct)
    except (ValueError, KeyError, SyntaxError) as error:
        run.error = f"unreadable answer ({type(error).__name__}: {error}): {body[:300]!r}"
        return None


def verdict(shape: Shape, ours: QueryRun, theirs: QueryRun) -> str:
    if ours.error or theirs.error:
        return "n/a (error)"
    if ours.answer == theirs.answer:
        return "same"
    if (shape.unordered_limit and ours.full_answer == theirs.full_answer
            and ours.answer.within(ours.full_answer) and theirs.answer.within(theirs.full_answer)
            and ours.answer.rows.total() == theirs.answer.rows.total()):
        return "same (other rows of the same full answer)"
    return "DIFFERENT"


def mix_client(port: int, queries: list[tuple[str, str]], index: int, seconds: float, barrier, results) -> None:
    """One client process of the concurrent mix: the light queries round-robin for ``seconds``."""
    client = Client(port)
    for text, accept in queries:
        client.query(text, accept)
    barrier.wait()
    latencies, errors, first_error = [], 0, None
    started_at = time.perf_counter()
    i = index
    while time.perf_counter() - started_at < seconds:
        text, accept = queries[i % len(queries)]
        status, body, elapsed = client.query(text, accept)
        latencies.append(elapsed)
        if status != 200:
            errors += 1
            first_error = first_error or f"{describe(status, body)}\nquery: {text}"
        i += 1
    results.put((latencies, time.perf_counter() - started_at, errors, first_error))


def concurrent_mix(server: Server, focus: data.Focus, seconds: float) -> dict:
    queries = [(shape.text(focus), shape.accept) for shape in LIGHT]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(CLIENTS + 1)
    results = context.Queue()
    workers = [context.Process(target=mix_client, args=(server.port, queries, i, seconds, barrier, results))
               for i in range(CLIENTS)]
    for worker in workers:
        worker.start()
    barrier.wait(timeout=300)
    collected = [results.get(timeout=seconds + 900) for _ in workers]
    for worker in workers:
        worker.join()
    latencies = [latency for worker_latencies, *_ in collected for latency in worker_latencies]
    errors = [error for *_, error in collected if error]
    return {
        "rate": len(latencies) / max(elapsed for _, elapsed, _, _ in collected),
        "p50_ms": ms(percentile(latencies, 0.5)),
        "p99_ms": ms(percentile(latencies, 0.99)),
        "errors": sum(count for _, _, count, _ in collected),
        "first_error": errors[0] if errors else None,
    }


def updates(server: Server, focus: data.Focus) -> dict:
    client = Client(server.port)
    latencies, errors, first_error = [], 0, None
    started_at = time.perf_counter()
    for i in range(UPDATES):
        text = NEW_REVIEW.substitute(bench=data.BENCH, i=i, product=f"<{focus.product}>")
        status, body, elapsed = client.update(text)
        latencies.append(elapsed)
        if status not in (200, 204):
            errors += 1
            first_error = first_error or f"{describe(status, body)}\nupdate: {text}"
    total = time.perf_counter() - started_at
    status, body, _ = client.query(REVIEW_COUNT.substitute(product=f"<{focus.product}>"))
    client.close()
    return {
        "rate": UPDATES / total,
        "p50_ms": ms(percentile(latencies, 0.5)),
        "p99_ms": ms(percentile(latencies, 0.99)),
        "errors": errors,
        "first_error": first_error,
        "reviews_after": count_answer(body) if status == 200 else describe(status, body),
    }


def health(server: Server) -> dict:
    client = Client(server.port)
    latencies = []
    for i in range(10 + HEALTH_RUNS):
        status, body, elapsed = client.send("GET", "/health")
        if status != 200:
            return {"error": describe(status, body)}
        if i >= 10:
            latencies.append(elapsed)
    client.close()
    return {"median_ms": ms(statistics.median(latencies)), "p90_ms": ms(percentile(latencies, 0.9))}


def gsp_load(tools: Tools, name: str, bodies: dict[str, bytes], store: Path) -> dict:
    with started(tools, name, store, max_body_mb=GSP_MAX_BODY_MB) as server:
        client = Client(server.port)
        rss_empty = server.rss_mb()
        errors = []
        started_at = time.perf_counter()
        for graph, body in bodies.items():
            status, response, _ = client.send("POST", "/store?" + urllib.parse.urlencode({"graph": graph}), body,
                                              {"Content-Type": N_TRIPLES})
            if status not in (200, 201, 204):
                errors.append(f"POST /store?graph={graph} ({len(body):,} bytes): {describe(status, response)}")
        seconds = time.perf_counter() - started_at
        rss_after = server.rss_mb()
        time.sleep(GSP_SETTLE_S)
        rss_later = server.rss_mb()
        status, body, _ = client.query(QUAD_COUNT)
        client.close()
    return {
        "seconds": seconds,
        "rss_empty": rss_empty,
        "rss_after": rss_after,
        "rss_later": rss_later,
        "quads": count_answer(body) if status == 200 else describe(status, body),
        "errors": errors,
    }


def timeout_check(server: Server, focus: data.Focus, limit_s: float) -> dict:
    """The runaway query in a thread; point lookups every 50 ms on another connection meanwhile."""
    runaway: dict = {}

    def run() -> None:
        client = Client(server.port, timeout=limit_s)
        started_at = time.perf_counter()
        try:
            status, body, _ = client.query(RUNAWAY)
            runaway.update(status=status, response=body[:300].decode("utf-8", "replace").strip())
        except TimeoutError:
            runaway.update(status=None, response=f"still running after {limit_s:.0f} s (client gave up)")
        runaway["seconds"] = time.perf_counter() - started_at
        client.close()

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.1)  # let the runaway reach the server first
    client = Client(server.port)
    lookup = POINT_LOOKUP.text(focus)
    latencies, failures = [], []
    next_at = time.perf_counter()
    while thread.is_alive():
        status, body, elapsed = client.query(lookup)
        latencies.append(elapsed)
        if status != 200:
            failures.append(describe(status, body))
        next_at += 0.05
        time.sleep(max(0.0, next_at - time.perf_counter()))
    thread.join()
    client.close()
    return {
        **runaway,
        "lookups": len(latencies),
        "lookup_median_ms": ms(statistics.median(latencies)),
        "lookup_max_ms": ms(max(latencies)),
        "lookup_failures": failures,
    }


# --- one dataset size ------------------------------------------------------------------------


def run_size(tools: Tools, triples: int, args, work: Path, timeout_phase: bool) -> dict:
    file = data.dataset(triples, DATA_CACHE)
    result: dict = {name: run_server(tools, name, file, triples, args, work, timeout_phase) for name in SERVERS}
    result["log_errors"] = {name: result[name].pop("log_errors") for name in SERVERS}
    return result


def run_server(tools: Tools, name: str, file: Path, triples: int, args, work: Path, timeout_phase: bool) -> dict:
    """Every phase of one server on one dataset, each on a fresh start of the server."""
    focus = data.focus(triples)
    figures: dict = {}
    store = work / f"{name}-{triples}"
    print(f"{triples:,} triples, {name}: load", file=sys.stderr, flush=True)
    figures["load_s"] = load(tools, name, file, store)
    with started(tools, name, store) as server:
        figures["queries"] = measure_queries(server, focus, args.warmup, args.runs, args.whole_runs)
    with started(tools, name, store) as server:
        if "concurrent" not in args.skip:
            print(f"  {name}: concurrent mix", file=sys.stderr, flush=True)
            figures["concurrent"] = concurrent_mix(server, focus, args.concurrent_seconds)
        if "updates" not in args.skip:
            print(f"  {name}: updates", file=sys.stderr, flush=True)
            figures["updates"] = updates(server, focus)
        if name == "cqels" and "health" not in args.skip:
            figures["health"] = health(server)
    if timeout_phase and (name == "cqels" or tools.oxigraph_timeout):
        print(f"  {name}: timeout check", file=sys.stderr, flush=True)
        with started(tools, name, store, timeout=RUNAWAY_TIMEOUT_S) as server:
            figures["timeout"] = timeout_check(server, focus, limit_s=max(60.0, 12 * RUNAWAY_TIMEOUT_S))
    shutil.rmtree(store)
    if "gsp" not in args.skip:
        print(f"  {name}: GSP load", file=sys.stderr, flush=True)
        figures["gsp"] = gsp_load(tools, name, data.graph_bodies(file), work / f"{name}-{triples}-gsp")
        shutil.rmtree(work / f"{name}-{triples}-gsp")
    logs = sorted(tools.logs.glob(f"{name}-*"))
    figures["log_errors"] = [f"{log.name}: {line}" for log in logs for line in log_errors(log)]
    for log in logs:
        log.unlink()
    return figures


def has_timeout_option(oxigraph: Path) -> bool:
    help_text = subprocess.run([str(oxigraph), "serve", "--help"], capture_output=True, text=True, check=True).stdout
    return "--timeout-s" in help_text


# --- report ----------------------------------------------------------------------------------


def machine_line(oxigraph_version: str) -> str:
    # Not engine.machine(): importing the engine for it could fail, at the end of a long run,
    # while the endpoint's code is being changed.
    cpuinfo, meminfo = Path("/proc/cpuinfo").read_text(), Path("/proc/meminfo").read_text()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
               platform.machine())
    memory_kb = next(int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:"))
    return (f"{cpu}, {os.cpu_count()} cores, {memory_kb / 1024 ** 2:.0f} GiB RAM, {platform.system()} "
            f"{platform.release()}, {platform.python_implementation()} {platform.python_version()}, "
            f"pyoxigraph {package_version('pyoxigraph')}, Oxigraph server {oxigraph_version}")


def fmt_ms(run: QueryRun, q: float | None = None) -> str:
    if not run.seconds:
        return "error"
    return f"{ms(statistics.median(run.seconds) if q is None else percentile(run.seconds, q)):.2f}"


def query_table(result: dict) -> list[str]:
    lines = [
        "| # | query | cqels median | cqels p90 | oxigraph median | oxigraph p90 | median cqels/oxigraph | rows "
        "| answers |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for shape in SHAPES:
        ours, theirs = result["cqels"]["queries"][shape.number], result["oxigraph"]["queries"][shape.number]
        ratio = (f"{statistics.median(ours.seconds) / statistics.median(theirs.seconds):.1f}×"
                 if ours.seconds and theirs.seconds else "")
        reference = theirs.answer or ours.answer
        rows = reference.rows.total() if reference else ""
        kind = "whole data" if shape.whole_data else "light"
        lines.append(f"| {shape.number} | {shape.name} ({kind}) | {fmt_ms(ours)} | {fmt_ms(ours, 0.9)} | "
                     f"{fmt_ms(theirs)} | {fmt_ms(theirs, 0.9)} | {ratio} | {rows} | {verdict(shape, ours, theirs)} |")
    return lines


def phase_tables(results: dict[int, dict], args) -> list[str]:
    lines = load_table(results)
    if "concurrent" not in args.skip:
        lines += concurrent_table(results, args.concurrent_seconds)
    if "updates" not in args.skip:
        lines += updates_table(results)
    if "gsp" not in args.skip:
        lines += gsp_table(results)
    if "health" not in args.skip:
        lines += health_table(results)
    return lines


def load_table(results: dict[int, dict]) -> list[str]:
    lines = ["## Load (N-Quads file into an empty directory)", "",
             "| triples | cqels load (s) | triples/s | oxigraph load (s) | triples/s | time cqels/oxigraph |",
             "|---:|---:|---:|---:|---:|---:|"]
    for triples, r in results.items():
        ours, theirs = r["cqels"]["load_s"], r["oxigraph"]["load_s"]
        lines.append(f"| {triples:,} | {ours:.2f} | {triples / ours:,.0f} | {theirs:.2f} | {triples / theirs:,.0f} | "
                     f"{ours / theirs:.1f}× |")
    return lines


def concurrent_table(results: dict[int, dict], seconds: float) -> list[str]:
    heading = [f"## Concurrent light mix ({CLIENTS} client processes, queries 1–7 round-robin, {seconds:g} s)", "",
               "The client processes run on the same cores as the server."]
    return _rate_table(results, "concurrent", heading, "q/s", [])


def updates_table(results: dict[int, dict]) -> list[str]:
    heading = [f"## Updates ({UPDATES:,} sequential INSERT DATA of 3 triples, one connection)"]
    return _rate_table(results, "updates", heading, "req/s", [("reviews of the product after", "reviews_after")])


def _rate_table(results: dict[int, dict], phase: str, heading: list[str], unit: str,
                extra: list[tuple[str, str]]) -> list[str]:
    """A table of a throughput phase: rate, p50, p99, errors and ``extra`` columns per server and size."""
    header = f"| triples | server | {unit} | p50 (ms) | p99 (ms) | errors | " + "".join(
        f"{title} | " for title, _ in extra) + f"{unit} cqels/oxigraph |"
    lines = ["", *heading, "", header, "|---:|---|" + "---:|" * (5 + len(extra))]
    for triples, r in results.items():
        ratio = r["cqels"][phase]["rate"] / r["oxigraph"][phase]["rate"]
        for name in SERVERS:
            m = r[name][phase]
            cells = "".join(f"{m[key]} | " for _, key in extra)
            lines.append(f"| {triples:,} | {name} | {m['rate']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | "
                         f"{m['errors']} | {cells}{f'{ratio:.2f}×' if name == 'cqels' else ''} |")
    return lines


def gsp_table(results: dict[int, dict]) -> list[str]:
    lines = ["", "## Graph Store Protocol load into an empty store (one POST per named graph)", "",
             "Resident memory of the server process (for cqels its python process, without the children it "
             "forks for queries).", "",
             f"| triples | server | RSS empty (MB) | RSS right after (MB) | RSS {GSP_SETTLE_S} s later (MB) | load (s) | "
             "triples/s | quads stored |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for triples, r in results.items():
        for name in SERVERS:
            g = r[name]["gsp"]
            lines.append(f"| {triples:,} | {name} | {g['rss_empty']:.0f} | {g['rss_after']:.0f} | {g['rss_later']:.0f} | "
                         f"{g['seconds']:.2f} | {triples / g['seconds']:,.0f} | {g['quads']} |")
    return lines


def health_table(results: dict[int, dict]) -> list[str]:
    lines = ["", f"## `GET /health` (cqels only, {HEALTH_RUNS} requests, one connection)", "",
             "| triples | median (ms) | p90 (ms) |", "|---:|---:|---:|"]
    for triples, r in results.items():
        h = r["cqels"]["health"]
        lines.append(f"| {triples:,} | {h['error']} | |" if "error" in h
                     else f"| {triples:,} | {h['median_ms']:.2f} | {h['p90_ms']:.2f} |")
    return lines


def timeout_table(result: dict, triples: int, oxigraph_has_timeout: bool) -> list[str]:
    lines = ["", f"## Query timeout ({RUNAWAY_TIMEOUT_S} s, {triples:,} triples)", "",
             f"`{RUNAWAY}` in one connection; meanwhile query 1 (point lookup) every 50 ms on another.", "",
             "| server | setting | runaway ended after (s) | status | response | lookups | lookup median (ms) | "
             "lookup max (ms) | failed lookups |", "|---|---|---:|---|---|---:|---:|---:|---:|"]
    for name in SERVERS:
        t = result[name].get("timeout")
        if t is None:
            continue
        setting = f"--query-timeout {RUNAWAY_TIMEOUT_S}" if name == "cqels" else f"--timeout-s {RUNAWAY_TIMEOUT_S}"
        response = t["response"].replace("|", "\\|").replace("\n", " ")[:120]
        lines.append(f"| {name} | `{setting}` | {t['seconds']:.1f} | {t['status']} | {response} | {t['lookups']} | "
                     f"{t['lookup_median_ms']:.2f} | {t['lookup_max_ms']:.1f} | {len(t['lookup_failures'])} |")
    if not oxigraph_has_timeout:
        lines += ["", "`oxigraph serve` has no timeout option: only cqels was checked."]
    return lines


def problems(results: dict[int, dict]) -> list[str]:
    found = []
    for triples, r in results.items():
        focus = data.focus(triples)
        for shape in SHAPES:
            ours, theirs = r["cqels"]["queries"][shape.number], r["oxigraph"]["queries"][shape.number]
            for name, run in (("cqels", ours), ("oxigraph", theirs)):
                if run.error:
                    found.append(f"{triples:,} triples, {name}, query {shape.number}: {run.error}\n\n"
                                 f"```sparql\n{shape.text(focus)}\n```")
            if verdict(shape, ours, theirs) == "DIFFERENT":
                found.append(f"{triples:,} triples, query {shape.number}: DIFFERENT answers: "
                             f"{ours.answer.difference(theirs.answer)}\n\n```sparql\n{shape.text(focus)}\n```")
        for name in SERVERS:
            figures = r[name]
            for phase in ("concurrent", "updates"):
                if figures.get(phase, {}).get("first_error"):
                    found.append(f"{triples:,} triples, {name}, {phase}: {figures[phase]['first_error']}")
            found += [f"{triples:,} triples, {name}, GSP: {error}" for error in figures.get("gsp", {}).get("errors", [])]
            failures = figures.get("timeout", {}).get("lookup_failures", [])
            if failures:
                found.append(f"{triples:,} triples, {name}, lookups during the runaway: {len(failures)} failed, "
                             f"first: {failures[0]}")
            found += [f"{triples:,} triples, {name} log: {line}" for line in r["log_errors"][name]]
    return found


def report(results: dict[int, dict], args, command: str, oxigraph_version: str, oxigraph_has_timeout: bool) -> str:
    lines = [
        f"# SPARQL endpoint: `cqels serve` vs Oxigraph server {oxigraph_version}",
        "",
        f"Machine: {machine_line(oxigraph_version)}; load average {os.getloadavg()[0]:.1f} at the end. "
        f"Produced by `{command}`, both servers in one run, one at a time, on loopback: `cqels serve "
        f"--cache-engine local --query-timeout {QUERY_TIMEOUT_S}`, `oxigraph serve` with its defaults. "
        f"Queries on one keep-alive connection, {args.warmup} warm-up runs, then {args.runs} measured runs of "
        f"the light queries (1–7) and {args.whole_runs} of the whole-data ones (8–10); times in ms, the whole "
        "response read. \"answers\" compares the two servers' results (rows as a multiset, blank node labels "
        "ignored); \"rows\" is Oxigraph's count.",
    ]
    for triples, r in results.items():
        lines += ["", f"## {triples:,} triples: queries (ms)", "", *query_table(r)]
    lines += ["", *phase_tables(results, args)]
    largest = max(results)
    if any("timeout" in results[largest][name] for name in SERVERS):
        lines += timeout_table(results[largest], largest, oxigraph_has_timeout)
    found = problems(results)
    lines += ["", "## Problems", ""] + (["- " + problem.replace("\n", "\n  ") for problem in found] or ["None seen."])
    lines += ["", "Queries (with `PREFIX v: <http://bench.example/vocab/>`, `g: <http://bench.example/graph/>`, "
              "`rdfs:`):", ""]
    lines += [f"{shape.number}. {shape.name}: `{' '.join(shape.template.split())}`" for shape in SHAPES]
    return "\n".join(lines) + "\n"


def plot(results: dict[int, dict], args, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    sizes = list(results)
    figure, axes = plt.subplots(1, len(sizes) + 1, figsize=(6 * (len(sizes) + 1), 4.5))
    numbers = [shape.number for shape in SHAPES]
    for axis, triples in zip(axes, sizes):
        for offset, name in ((-0.2, "cqels"), (0.2, "oxigraph")):
            runs = results[triples][name]["queries"]
            medians = [ms(statistics.median(runs[n].seconds)) if runs[n].seconds else 0 for n in numbers]
            axis.bar([n + offset for n in numbers], medians, width=0.4, label=name)
        axis.set_yscale("log")
        axis.set_xticks(numbers)
        axis.set_xlabel("query (1–7 light, 8–10 whole data)")
        axis.set_ylabel("median (ms)")
        axis.set_title(f"{triples:,} triples")
        axis.legend(loc="upper left")
    ratio_axis = axes[-1]
    phases = [("load triples/s", lambda r, name: 1 / r[name]["load_s"])]
    if "concurrent" not in args.skip:
        phases.append(("concurrent q/s", lambda r, name: r[name]["concurrent"]["rate"]))
    if "updates" not in args.skip:
        phases.append(("updates req/s", lambda r, name: r[name]["updates"]["rate"]))
    if "gsp" not in args.skip:
        phases.append(("GSP triples/s", lambda r, name: 1 / r[name]["gsp"]["seconds"]))
    width = 0.8 / len(sizes)
    for k, triples in enumerate(sizes):
        ratios = [value(results[triples], "cqels") / value(results[triples], "oxigraph") for _, value in phases]
        ratio_axis.bar([i + (k - (len(sizes) - 1) / 2) * width for i in range(len(phases))], ratios, width=width,
                       label=f"{triples:,} triples")
    ratio_axis.axhline(1, color="grey", linewidth=0.8)
    ratio_axis.set_yscale("log")
    ratio_axis.set_xticks(range(len(phases)))
    ratio_axis.set_xticklabels([label for label, _ in phases])
    ratio_axis.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ratio_axis.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ratio_axis.set_ylabel("cqels / oxigraph (higher is better)")
    ratio_axis.set_title("Throughput ratios")
    ratio_axis.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=100)


# --- main ------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated dataset sizes in triples")
    parser.add_argument("--concurrent-seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=int, default=5, help="warm-up runs of each query")
    parser.add_argument("--runs", type=int, default=50, help="measured runs of each light query (1-7)")
    parser.add_argument("--whole-runs", type=int, default=5, help="measured runs of each whole-data query (8-10)")
    parser.add_argument("--oxigraph", type=Path, help=f"an oxigraph {OXIGRAPH_VERSION} binary (default: installed "
                        f"into {OXIGRAPH_VENV.relative_to(HERE.parent)})")
    parser.add_argument("--skip", nargs="*", default=[], choices=["concurrent", "updates", "health", "gsp", "timeout"],
                        help="phases to leave out")
    parser.add_argument("--work-dir", type=Path, help="where the stores go (default: a new temporary directory)")
    parser.add_argument("--quick", action="store_true", help="20,000 triples, 5 s of concurrency, fewer runs")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "endpoint.md")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.concurrent_seconds, args.warmup, args.runs, args.whole_runs = "20000", 5.0, 2, 10, 3
    args.sizes = [int(size) for size in args.sizes.split(",")]
    return args


def warn_if_different(result: dict, triples: int) -> None:
    for shape in SHAPES:
        if verdict(shape, result["cqels"]["queries"][shape.number], result["oxigraph"]["queries"][shape.number]) \
                == "DIFFERENT":
            print(f"\n{'!' * 80}\nWARNING: {triples:,} triples, query {shape.number} ({shape.name}): the two servers "
                  f"gave DIFFERENT answers\n{'!' * 80}\n", file=sys.stderr, flush=True)


def main() -> None:
    args = parse_args()
    command = "python benchmarks/endpoint.py " + " ".join(sys.argv[1:])
    work = Path(tempfile.mkdtemp(prefix="endpoint-bench-", dir=args.work_dir))
    (work / "logs").mkdir()
    oxigraph = oxigraph_binary(args.oxigraph)
    tools = Tools(Path(sys.executable).parent / "cqels", oxigraph, work / "logs", has_timeout_option(oxigraph))
    oxigraph_version = tool_version(oxigraph)
    results = {}
    for triples in args.sizes:
        timeout_phase = triples == max(args.sizes) and "timeout" not in args.skip
        results[triples] = run_size(tools, triples, args, work, timeout_phase)
        warn_if_different(results[triples], triples)
    shutil.rmtree(work)
    text = report(results, args, command, oxigraph_version, tools.oxigraph_timeout)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    plot(results, args, args.out.with_suffix(".png"))
    print(text)
    found = problems(results)
    if found:
        print(f"WARNING: {len(found)} problem(s), see 'Problems' above; "
              f"{sum('DIFFERENT' in p for p in found)} with DIFFERENT answers", file=sys.stderr)


if __name__ == "__main__":
    main()
