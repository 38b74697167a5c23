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

    python benchmarks/operators.py --sweep [--baseline /tmp/base] [--sweep-sizes 1000 10000 100000]

measures, instead, the cost of one delta against the state an upper operator holds (DISTINCT,
NOT EXISTS keyed on its shared column and with a correlated filter, OPTIONAL, top-k with LIMIT 10 and
with OFFSET 10 alone), N rows per input, each point in a process of its own (so that the resident
memory gained while filling it is the operator's). ``--baseline`` names another checkout, built in
place (``git worktree add /tmp/base <rev>``, then ``python setup.py build_ext --inplace`` there): its
operators run the same workload in the same run, alternating with this checkout's.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import random
import statistics
import subprocess
import time
import types
from pathlib import Path

import pyoxigraph as ox
from engine import run_child

from cqels_endpoint import parse_query
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.operators import _aggregate, _distinct, _negation, _optional, _topk, _union
from cqels_endpoint.operators import _join as compiled
from cqels_endpoint.operators.base import Delta, Operator
from cqels_endpoint.operators.reference import aggregate as twin_aggregate
from cqels_endpoint.operators.reference import join as twin
from cqels_endpoint.operators.reference import negation as twin_negation
from cqels_endpoint.operators.reference import topk as twin_topk
from cqels_endpoint.operators.static_cache import StaticCache
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.decoding import TermDecoder
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


# Modules the former sources import that have moved since: old dotted name -> today's.
MOVED_MODULES = {"cqels_endpoint.operators.decoding": "cqels_endpoint.runtime.decoding"}


def former_module(operator: str, revision: str) -> types.ModuleType:
    """The module source of ``operator`` at git ``revision``, executed as a fresh module."""
    path = FORMER_SOURCES[operator]
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    for old, new in MOVED_MODULES.items():
        source = source.replace(old, new)
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


# ---------------------------------------------------------------- per-delta cost against state size

# Each sweep workload is (ports, row of (port, seq)): row values are fresh ints computed from the
# sequence number, so the operator under test is the only holder of the rows it keeps and the
# driver can rebuild the row of an expiry instead of remembering it.
SWEEP_BASE = 1 << 40  # far from the inline-id range: plain dictionary-like ids
SWEEP_FILL_TICK = 1_000
SWEEP_ROUND_SECONDS = 5.0  # a round stops early past this (the old top-k with OFFSET alone is O(n) a tick)
SWEEP_OPERATORS = (
    "distinct",
    "not exists (by key)",
    "not exists + correlated filter",
    "optional",
    "top-k LIMIT 10",
    "top-k OFFSET 10",
)


def _scramble(seq: int, space: int) -> int:
    return (seq * 2_654_435_761) % space


def sweep_rows(operator: str, size: int):
    """``(port, seq) -> row`` for ``operator`` with ``size`` live rows per input."""
    if operator == "distinct":
        return lambda port, seq: (SWEEP_BASE + _scramble(seq, 2 * size), SWEEP_BASE + seq % 3)
    if operator.startswith("top-k"):
        dictionary = TermDictionary()
        integer = ox.NamedNode(XSD_INTEGER)
        values = [dictionary.encode(ox.Literal(str(i), datatype=integer)) for i in range(4096)]
        return lambda port, seq: (values[seq % 64], values[_scramble(seq, 4096)])
    # Two inputs sharing ?loc, about one row per key and side: (?person ?loc) and (?loc ?tag).
    return lambda port, seq: (
        (SWEEP_BASE + seq, SWEEP_BASE + _scramble(seq, size)) if port == 0
        else (SWEEP_BASE + _scramble(seq, size), SWEEP_BASE + seq)
    )


def sweep_operator(operator: str):
    left, right = ("person", "loc"), ("loc", "tag")
    if operator == "distinct":
        return _distinct.Distinct(("a", "b"))
    if operator == "not exists (by key)":
        return _negation.Negation(left, right, "not exists")
    if operator == "not exists + correlated filter":
        return _negation.Negation(left, right, "not exists", correlated)
    if operator == "optional":
        return _optional.OptionalJoin(left, right)
    order = "ORDER BY DESC(?v)"
    query = f"SELECT ?g ?v WHERE {{ ?g <http://ex.org/v> ?v }} {order}"
    conditions = next(node for node in walk(to_algebra(parse_query(query))) if isinstance(node, n.OrderBy)).conditions
    offset, limit = (0, 10) if operator == "top-k LIMIT 10" else (10, None)
    return _topk.TopK(("g", "v"), conditions, ("g", "v"), TermDecoder(TermDictionary()), offset, limit)


def resident_bytes() -> int:
    """Resident memory after a collection and after returning the C heap's free pages to the system."""
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def sweep_child(operator: str, size: int, steps: int, repeat: int) -> dict:
    """One operator filled with ``size`` rows per input (one tick), then ``repeat`` rounds of ``steps``
    ticks of the steady state (one row in, the oldest out, on each input in turn): resident memory
    per row held and µs per delta. Runs in a process of its own, so the memory is the operator's."""
    row_of = sweep_rows(operator, size)
    warm = sweep_operator(operator)  # first calls: lazy imports, compiled expressions, allocator pools
    for port in range(warm.arity):
        warm.on_batch(port, [Delta(row_of(port, seq), 1, (seq,)) for seq in range(100)])
        warm.on_punctuation(0)
    operator_under_test = sweep_operator(operator)
    top = Counting(operator_under_test.schema)
    operator_under_test.connect(top)
    ports = range(operator_under_test.arity)
    del warm
    before = resident_bytes()
    # Filled in ticks of SWEEP_FILL_TICK rows, so that the driver's transient objects are reused
    # rather than piled up in memory the allocator keeps.
    for start in range(0, size * len(ports), SWEEP_FILL_TICK):
        for port in ports:
            operator_under_test.on_batch(
                port, [Delta(row_of(port, seq), 1, (seq,)) for seq in range(start + port, min(start + SWEEP_FILL_TICK, size * len(ports)), len(ports))]
            )
        for _port in ports:
            operator_under_test.on_punctuation(start)
    held = resident_bytes() - before
    filled = top.inputs_seen
    oldest, seq, timings, ticks = 0, size * len(ports), [], 0
    for _ in range(repeat):
        start = time.process_time()  # CPU time: other jobs on the machine stretch wall time, not this
        for tick in range(steps):
            port = tick % len(ports)
            operator_under_test.on_batch(port, [Delta(row_of(port, seq), 1, (seq,))])
            operator_under_test.on_batch(port, [Delta(row_of(port, oldest), -1, (oldest,))])
            for _port in ports:
                operator_under_test.on_punctuation(seq)
            seq += 1
            oldest += 1
            if tick % 50 == 49 and time.process_time() - start > SWEEP_ROUND_SECONDS:
                break  # a slow point: fewer ticks
        ticks = tick + 1
        timings.append((time.process_time() - start) / (2 * ticks) * 1e6)
    return {"us_per_delta": timings, "bytes_per_row": held / (size * len(ports)), "ticks": ticks, "filled": filled}


def sweep(args: argparse.Namespace) -> list[str]:
    """The sweep in child processes, this checkout against ``--baseline`` (a checkout of the revision
    to compare with, built in place), alternating the two for every point."""
    trees = {"this checkout": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    revisions = {name: git_revision(tree) for name, tree in trees.items()}
    described = ", ".join(f"{name} = {tree} (git {revisions[name]})" for name, tree in trees.items())
    lines = [
        "",
        "## Per-delta cost and memory against state size",
        "",
        f"{described}. Each point is a fresh process per implementation: the operator is filled with "
        f"N rows per input (ticks of {SWEEP_FILL_TICK:,} rows), then runs {args.sweep_steps} ticks of its steady state (one row in, "
        f"the oldest out, inputs in turn); µs per delta in process CPU time, median of {args.repeat} rounds; bytes per row held "
        "= resident-memory growth over the fill / rows held. Load average at start: "
        f"{os.getloadavg()[0]:.2f}.",
        "",
        "| operator | N | " + " | ".join(f"{name} µs/delta" for name in trees) + " | "
        + " | ".join(f"{name} B/row" for name in trees) + (" | speed-up | memory |" if len(trees) > 1 else " |"),
        "|---|---:|" + "---:|" * (2 * len(trees) + (2 if len(trees) > 1 else 0)),
    ]
    results: dict[tuple[str, int], dict[str, dict]] = {}
    for operator in SWEEP_OPERATORS:
        for size in args.sweep_sizes:
            point = results[(operator, size)] = {}
            for name, tree in trees.items():
                point[name] = run_child(tree, __file__, "--sweep-child", operator, size, "--sweep-steps", args.sweep_steps, "--repeat", args.repeat)
            if len({point[name]["filled"] for name in trees}) > 1:
                raise AssertionError(f"{operator} N={size}: the checkouts emitted different outputs for the same fill")
            cost = {name: statistics.median(point[name]["us_per_delta"]) for name in trees}
            memory = {name: point[name]["bytes_per_row"] for name in trees}
            line = (f"| {operator} | {size:,} | " + " | ".join(f"{cost[name]:.2f}" for name in trees) + " | "
                    + " | ".join(f"{memory[name]:,.0f}" for name in trees) + " |")
            if len(trees) > 1:
                line += (f" {cost['baseline'] / cost['this checkout']:.2f}× |"
                         f" {memory['baseline'] / max(memory['this checkout'], 1):.2f}× smaller |")
            lines.append(line)
            print(line, flush=True)
    if args.sweep_plot:
        plot_sweep(results, trees, args.sweep_plot)
        lines.extend(["", f"![per-delta cost against state size]({args.sweep_plot.name})"])
    return lines


def git_revision(tree: Path) -> str:
    """The checkout's commit, with "+ changes" when its working tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + (" + changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def plot_sweep(results: dict, trees: dict, path: Path) -> None:
    from engine import pyplot  # the shared optional matplotlib import of the engine benchmark

    plt = pyplot()
    if plt is None:
        return
    figure, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
    for axis, operator in zip(axes.flat, SWEEP_OPERATORS):
        sizes = sorted(size for op, size in results if op == operator)
        for name in trees:
            axis.plot(sizes, [statistics.median(results[(operator, size)][name]["us_per_delta"]) for size in sizes],
                      marker="o", label=name)
        axis.set_title(operator, fontsize=10)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_ylabel("µs per delta (log)")
        axis.grid(alpha=0.3)
    axes.flat[0].legend()
    for axis in axes[1]:
        axis.set_xlabel("rows held per input")
    figure.tight_layout()
    figure.savefig(path, dpi=90)


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
    parser.add_argument("--sweep", action="store_true",
                        help="only the per-delta cost against state size sweep of the upper operators (to --sweep-out)")
    parser.add_argument("--sweep-sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--sweep-steps", type=int, default=2_000)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of the revision to compare with, built in place (git worktree add … ; "
                        "python setup.py build_ext --inplace there)")
    parser.add_argument("--sweep-out", type=Path, default=Path(__file__).parent / "results" / "operators_sweep.md")
    parser.add_argument("--sweep-plot", type=Path, default=Path(__file__).parent / "results" / "operators_sweep.png")
    parser.add_argument("--sweep-child", nargs=2, metavar=("OPERATOR", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweep_child:
        operator, size = args.sweep_child
        print(json.dumps(sweep_child(operator, int(size), args.sweep_steps, args.repeat)))
        return
    from indexes import machine  # the shared machine line of the index benchmark

    if args.sweep:
        lines = ["# Upper operators against state size (`operators.py --sweep`)", "", f"Machine: {machine()}.", *sweep(args)]
        args.sweep_out.parent.mkdir(parents=True, exist_ok=True)
        args.sweep_out.write_text("\n".join(lines) + "\n")
        print(f"written {args.sweep_out}")
        return
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
