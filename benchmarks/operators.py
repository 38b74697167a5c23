"""Operator micro-benchmark: window buffers feeding the adaptive multiway join, compiled vs twin.

    python benchmarks/operators.py [--events 10000 100000] [--window 1000] [--keys 100]
                                   [--repeat 3] [--out benchmarks/results/operators.md]

The workload is the shape of the localisation example: a 3-way join of two stream patterns
(?person :detectedAt ?loc, ?person :carries ?tag) and a static cache (?loc :name ?name) of
``--keys`` locations. Each event inserts one triple into one of the two buffers (alternating) and,
once a buffer holds ``--window`` triples, expires its oldest one first: one punctuation per event,
as the engine ticks. People and locations are drawn from ``--keys`` values with a skew (a quarter
of the events hit one hot location). Reports events/s and output deltas/s (median and best of
``--repeat`` rounds after a warm-up), and the join's probe count, for both implementations. Other processes on
the machine skew single runs: compare the two implementations within one run only.

The second table measures the upper operators (aggregate, distinct, union, optional, negation) on
``--stateful-events`` events, each a tick of its own (insert one row, expire the oldest once an
input holds ``--window`` rows, punctuate). Per operator it times the compiled module, the
pure-Python incremental implementation it was ported from (``former``: loaded from git revision
``--former`` — the code as it was before the port — so it stays measurable in the same run), and,
where the reference twin is a different algorithm (aggregate and negation recompute, top-k
re-sorts), the twin on the first ``--twin-events`` events only (it re-scans every group member,
every pair or every row per tick). The top-k workload is ``ORDER BY DESC(?v) LIMIT 10`` over the
window; its former implementation was never committed, so it is only timed when ``--former-topk``
names a saved copy of operators/topk.py from before the port.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import time
import types
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.operators import _aggregate, _distinct, _negation, _optional, _topk, _union
from cqels_endpoint.operators import _join as compiled
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.runtime.decoding import TermDecoder
from cqels_endpoint.operators.reference import aggregate as twin_aggregate
from cqels_endpoint.operators.reference import join as twin
from cqels_endpoint.operators.reference import negation as twin_negation
from cqels_endpoint.operators.reference import topk as twin_topk
from cqels_endpoint.operators.static_cache import StaticCache
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.encoding import TermDictionary

IMPLEMENTATIONS = {"compiled": compiled, "twin": twin}


class Counting(Operator):
    """Counts what reaches the top without keeping it (a Sink's bag would dominate the timing)."""

    def __init__(self, schema) -> None:
        super().__init__(schema, "count")

    def on_batch(self, port, deltas) -> None:
        self.inputs_seen += len(deltas)


def events(count: int, keys: int, seed: int = 7) -> list[tuple[int, tuple[int, int, int]]]:
    rng = random.Random(seed)
    hot = keys // 2
    out = []
    for i in range(count):
        person = rng.randrange(keys * 4)
        if i % 2 == 0:
            location = hot if rng.random() < 0.25 else rng.randrange(keys)
            out.append((0, (person, 1_000_000, location)))
        else:
            out.append((1, (person, 1_000_001, rng.randrange(keys * 10))))
    return out


def one_round(impl, workload, keys: int, window: int) -> tuple[float, int, int]:
    detected = impl.WindowBuffer(("person", None, "loc"))
    carries = impl.WindowBuffer(("person", None, "tag"))
    cache = StaticCache(("loc", "name"))
    join = impl.MultiwayJoin([detected.schema, carries.schema, cache.schema])
    for port, source in enumerate((detected, carries, cache)):
        source.connect(join, port)
    top = Counting(join.schema)
    join.connect(top)
    cache.replace([(location, 2_000_000 + location) for location in range(keys)])
    sources = (detected, carries, cache)
    for source in sources:
        source.on_punctuation(0)
    buffers = (detected, carries)
    held = ([], [])
    start = time.perf_counter()
    for seq, (which, ids) in enumerate(workload, start=1):
        buffers[which].insert(seq, ids)
        held[which].append(seq)
        if len(held[which]) > window:
            buffers[which].expire(held[which].pop(0))
        for source in sources:
            source.on_punctuation(seq)
    seconds = time.perf_counter() - start
    return seconds, top.inputs_seen, join.counters()["probes"]


# ---------------------------------------------------------------- upper (stateful) operators

ROOT = Path(__file__).resolve().parent.parent
# The pure-Python incremental implementations before the Cython port, by operator: the incremental
# aggregate and negation lived in operators/, distinct, union and optional were the reference twins.
FORMER_SOURCES = {
    "aggregate": "cqels_endpoint/operators/aggregate.py",
    "distinct": "cqels_endpoint/operators/reference/distinct.py",
    "union": "cqels_endpoint/operators/reference/union.py",
    "optional": "cqels_endpoint/operators/reference/optional.py",
    "negation": "cqels_endpoint/operators/negation.py",
}
FORMER_REVISION = "e380919"  # the last commit before the port
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
# Per variant, the aggregates over ?x grouped by ?g: with SUM (a fold over the whole group per
# change) and with order statistics only (read by position in the per-group sorted list).
AGGREGATE_QUERIES = {
    "COUNT, SUM, MIN, MAX, MEDIAN": "(COUNT(*) AS ?c) (SUM(?x) AS ?s) (MIN(?x) AS ?mi) (MAX(?x) AS ?ma) (MEDIAN(?x) AS ?me)",
    "COUNT, MIN, MAX, MEDIAN": "(COUNT(*) AS ?c) (MIN(?x) AS ?mi) (MAX(?x) AS ?ma) (MEDIAN(?x) AS ?me)",
}


def former_module(operator: str, revision: str) -> types.ModuleType:
    """The module source of ``operator`` at git ``revision``, executed as a fresh module."""
    path = FORMER_SOURCES[operator]
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return source_module(f"former_{operator}", source, f"{revision}:{path}")


def source_module(name: str, source: str, origin: str) -> types.ModuleType:
    """``source`` executed as a fresh module ``name`` (``origin`` names it in tracebacks)."""
    module = types.ModuleType(name)
    exec(compile(source, origin, "exec"), module.__dict__)
    return module


def topk_factory(cls, dictionary: TermDictionary, order: str, limit: int):
    query = f"SELECT ?g ?v WHERE {{ ?g <http://ex.org/v> ?v }} {order} LIMIT {limit}"
    conditions = next(node for node in walk(to_algebra(parse_query(query))) if isinstance(node, n.OrderBy)).conditions
    return lambda: cls(("g", "v"), conditions, ("g", "v"), TermDecoder(dictionary), 0, limit)


def aggregate_factory(cls, dictionary: TermDictionary, aggregates: str):
    query = f"SELECT ?g {aggregates} WHERE {{ ?g <http://ex.org/v> ?x }} GROUP BY ?g"
    group = next(node for node in walk(to_algebra(parse_query(query))) if isinstance(node, n.Group))
    keys = [(None if var is None else var.name, expr) for var, expr in group.keys]
    aggregates = [(var.name, aggregate) for var, aggregate in group.aggregates]
    return lambda: cls(("g", "x"), keys, aggregates, TermDecoder(dictionary))


def correlated(merged: tuple) -> bool:
    """The shape of DEBS Q2's inner FILTER (?pickup > ?dropoff), on ids instead of decoded terms."""
    return merged[0] > merged[2]


def stateful_workloads(count: int, keys: int, dictionary: TermDictionary) -> dict[str, list[tuple[int, tuple]]]:
    """Per operator, ``count`` (port, row) events of term ids, skewed like the join workload."""
    rng = random.Random(11)
    hot = keys // 2

    def key() -> int:
        return hot if rng.random() < 0.25 else rng.randrange(keys)

    groups = [dictionary.encode(ox.NamedNode(f"http://ex.org/g{i}")) for i in range(keys)]
    numbers = [dictionary.encode(ox.Literal(str(i), datatype=ox.NamedNode(XSD_INTEGER))) for i in range(1000)]
    two_ports = [(i % 2, (rng.randrange(keys * 4), key()) if i % 2 == 0 else (key(), rng.randrange(keys * 10)))
                 for i in range(count)]
    return {
        "aggregate": [(0, (groups[key()], numbers[rng.randrange(1000)])) for _ in range(count)],
        "top-k": [(0, (groups[key()], numbers[rng.randrange(1000)])) for _ in range(count)],
        "distinct": [(0, (key(), rng.randrange(10))) for _ in range(count)],
        "union": two_ports,
        "optional": two_ports,
        "negation": two_ports,
    }


def stateful_factories(
    dictionary: TermDictionary, revision: str, former_topk: Path | None
) -> dict[str, dict[str, object]]:
    """Per operator (and variant), per implementation: a function building a fresh operator."""
    former = {name: former_module(name, revision) for name in FORMER_SOURCES}
    if former_topk is not None:
        former["top-k"] = source_module("former_topk", former_topk.read_text(), str(former_topk))
    left, right = ("person", "loc"), ("loc", "tag")
    factories = {
        f"aggregate ({variant})": {
            name: aggregate_factory(cls, dictionary, aggregates)
            for name, cls in (
                ("compiled", _aggregate.GroupAggregate),
                ("former", former["aggregate"].GroupAggregate),
                ("twin (recompute)", twin_aggregate.GroupAggregate),
            )
        }
        for variant, aggregates in AGGREGATE_QUERIES.items()
    }
    factories |= {
        "distinct": {name: (lambda m=m: m.Distinct(("a", "b"))) for name, m in
                     (("compiled", _distinct), ("former", former["distinct"]))},
        "union": {name: (lambda m=m: m.Union(left, right)) for name, m in
                  (("compiled", _union), ("former", former["union"]))},
        "optional": {name: (lambda m=m: m.OptionalJoin(left, right)) for name, m in
                     (("compiled", _optional), ("former", former["optional"]))},
    }
    for variant, condition in (("not exists", None), ("not exists + correlated filter", correlated)):
        factories[f"negation ({variant})"] = {
            name: (lambda m=m, c=condition: m.Negation(left, right, "not exists", c)) for name, m in
            (("compiled", _negation), ("former", former["negation"]), ("twin (recompute)", twin_negation))
        }
    factories["top-k (ORDER BY DESC(?v) LIMIT 10)"] = {
        name: topk_factory(module.TopK, dictionary, "ORDER BY DESC(?v)", 10)
        for name, module in (("compiled", _topk), ("former", former.get("top-k")), ("twin (re-sort)", twin_topk))
        if module is not None
    }
    return factories


def stateful_round(make, workload: list[tuple[int, tuple]], window: int) -> tuple[float, int]:
    operator = make()
    top = Counting(operator.schema)
    operator.connect(top)
    ports = range(operator.arity)
    held: tuple[list, ...] = tuple([] for _ in ports)
    start = time.perf_counter()
    for seq, (port, row) in enumerate(workload, start=1):
        operator.on_batch(port, [Delta(row, 1, (seq,))])
        held[port].append((row, seq))
        if len(held[port]) > window:
            old_row, old_seq = held[port].pop(0)
            operator.on_batch(port, [Delta(old_row, -1, (old_seq,))])
        for _port in ports:
            operator.on_punctuation(seq)
    return time.perf_counter() - start, top.inputs_seen


def stateful_table(args: argparse.Namespace) -> list[str]:
    dictionary = TermDictionary()
    workloads = stateful_workloads(args.stateful_events, args.keys, dictionary)
    lines = [
        "",
        "## Upper operators: compiled vs the former pure-Python implementation",
        "",
        f"{args.stateful_events} events (one tick each), window {args.window} rows per input, {args.keys} keys; "
        f"former = git {args.former} (for distinct, union and optional also today's reference twin; "
        + (f"for top-k the uncommitted pre-port file {args.former_topk}); " if args.former_topk else "none for top-k); ")
        + f"recomputing / re-sorting twins on the first {args.twin_events} events only.",
        "",
        "| operator | implementation | events | events/s | output deltas/s | outputs |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for operator, implementations in stateful_factories(dictionary, args.former, args.former_topk).items():
        workload = workloads[operator.split(" ")[0]]
        sized = {name: workload[: args.twin_events] if name.startswith("twin") else workload
                 for name in implementations}
        for name, make in implementations.items():
            stateful_round(make, sized[name][:1000], args.window)
        runs = {name: [] for name in implementations}
        for _ in range(args.repeat):
            for name, make in implementations.items():
                runs[name].append(stateful_round(make, sized[name], args.window))
        if "former" in runs and runs["compiled"][0][1] != runs["former"][0][1]:
            msg = f"{operator}: the compiled and former implementations emitted different output counts"
            raise AssertionError(msg)
        rates = {}
        for name in implementations:
            times = [seconds for seconds, _ in runs[name]]
            median, best = statistics.median(times), min(times)
            count, outputs = len(sized[name]), runs[name][0][1]
            rates[name] = count / median
            lines.append(
                f"| {operator} | {name} | {count} | {count / median:,.0f} ({count / best:,.0f}) | "
                f"{outputs / median:,.0f} | {outputs} |"
            )
            print(lines[-1], flush=True)
        if "former" in rates:
            lines.append(f"| {operator} | speed-up compiled / former | | {rates['compiled'] / rates['former']:.2f}× | | |")
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stateful-events", type=int, default=20_000)
    parser.add_argument("--twin-events", type=int, default=400)
    parser.add_argument("--former", default=FORMER_REVISION, help="git revision of the former implementations")
    parser.add_argument("--former-topk", type=Path, default=None,
                        help="a saved copy of the pure-Python top-k before the port (it was never committed); "
                        "without it top-k is timed compiled vs twin only")
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "operators.md")
    args = parser.parse_args()
    from indexes import machine  # the shared machine line of the index benchmark

    lines = [
        "# Operators: window buffers + adaptive multiway join, upper operators",
        "",
        f"Machine: {machine()}. Window {args.window} triples per buffer, {args.keys} keys, "
        f"median (best) of {args.repeat} rounds after a warm-up.",
        "",
        "| events | implementation | events/s | output deltas/s | outputs | probes |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for count in args.events:
        workload = events(count, args.keys)
        rates = {}
        runs = {name: [] for name in IMPLEMENTATIONS}
        for impl in IMPLEMENTATIONS.values():
            one_round(impl, workload[: min(count, 2000)], args.keys, args.window)
        # Rounds alternate between the implementations so a busy neighbour slows both alike.
        for _ in range(args.repeat):
            for name, impl in IMPLEMENTATIONS.items():
                runs[name].append(one_round(impl, workload, args.keys, args.window))
        for name in IMPLEMENTATIONS:
            times = [seconds for seconds, _, _ in runs[name]]
            _, outputs, probes = runs[name][0]
            median, best = statistics.median(times), min(times)
            rates[name] = count / median
            lines.append(
                f"| {count} | {name} | {count / median:,.0f} ({count / best:,.0f}) | "
                f"{outputs / median:,.0f} | {outputs} | {probes} |"
            )
            print(lines[-1], flush=True)
        lines.append(f"| {count} | speed-up | {rates['compiled'] / rates['twin']:.1f}× | | | |")
        print(lines[-1], flush=True)
    lines.extend(stateful_table(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
