"""A large Spark cache build collected to the driver against the same build written as Parquet and read in parts.

    python benchmarks/cache_parquet.py [--triples 10000000] [--threshold 500000]
                                       [--graph FILE] [--out benchmarks/results/cache_parquet.md]

The static graph is generated as N-Triples: ``triples / 7`` people, each with a type, a name, an
age (an inline integer), a city (one of 1000) and three ``:knows`` edges. It is loaded into an
in-memory ``StaticStore`` with ``StaticStore.load`` (pyoxigraph's parser): a cache build always
exports the graphs it reads from the store, so the store is where a large graph has to be, and the
normal load is the fastest way to put it there (``cqels load --spark`` ends in the same store).
The continuous query has one static cache, a 2-pattern join with a row per ``:knows`` edge
(``3/7`` of the triples)::

    SELECT * WHERE { STREAM <s> [RANGE 1s] { ?x :sees ?p } ?p :knows ?f . ?f :city ?c }

Each mode runs in a process of its own, so that one's memory does not count in the other's peak:
``collect`` (``SparkCacheEngine(parquet_rows=None)``, every row collected and decoded on the
driver) and ``parquet`` (``parquet_rows=--threshold``: written as Parquet and read back in parts).
Each process loads the graph, starts Spark on ``local[*]``, warms it with a build over a tiny
store, then measures

- build: ``SparkCacheEngine.build`` (the snapshot export, the Spark job, the collect or the write);
- install read: the rows read as the engine installs them (``CacheDelta(rows, []).steps(1000)``,
  what ``Engine._stage_caches`` iterates; the parts are counted, not encoded into an evaluator,
  whose cache holds the rows as ids in both modes alike);
- rebuild: one city of one person changed in the store, the cache built again and the difference
  to the first build computed and iterated (``bag_delta(...).steps(1000)``);

each with the peak resident set size of the Python driver process above its size just before
(sampled every 10 ms from ``/proc/self/statm``; the JVM is another process whose heap is
``--driver-memory``, 4g by default for both modes). Both modes must give the same number of rows and the same
order-independent checksum of the rows' N-Triples (computed after the measurements), checked before
anything is written. The machine's load average is recorded: others may share the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

from engine import machine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EX = "http://example.org/"
QUERY = (
    f"PREFIX : <{EX}> SELECT * WHERE {{ STREAM <{EX}s> [RANGE 1s] {{ ?x :sees ?p }} ?p :knows ?f . ?f :city ?c }}"
)
CHANGE = f"PREFIX : <{EX}> DELETE DATA {{ :p0 :city :c0 }} ; INSERT DATA {{ :p0 :city :c1 }}"


def write_graph(path: Path, triples: int) -> int:
    """``triples`` (rounded down to a multiple of 7) triples of people as N-Triples; their number."""
    people = max(triples // 7, 2)
    with path.open("w") as out:
        for i in range(people):
            p = f"<{EX}p{i}>"
            lines = [
                f"{p} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Person> .",
                f'{p} <{EX}name> "Person {i}" .',
                f'{p} <{EX}age> "{i % 90}"^^<http://www.w3.org/2001/XMLSchema#integer> .',
                f"{p} <{EX}city> <{EX}c{i % 1000}> .",
            ]
            lines.extend(f"{p} <{EX}knows> <{EX}p{(i * 7 + k * 13 + 1) % people}> ." for k in range(3))
            out.write("\n".join(lines) + "\n")
    return people * 7


class PeakRss:
    """The largest resident set size of this process seen by a sampling thread, in bytes."""

    PAGE = os.sysconf("SC_PAGE_SIZE")

    def __init__(self, interval_s: float = 0.01):
        self.interval_s = interval_s
        self.peak = self.now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @classmethod
    def now(cls) -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * cls.PAGE

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, self.now())

    def __enter__(self):
        self.start = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())

    @property
    def above_start_mb(self) -> float:
        return (self.peak - self.start) / 2**20


def checksum(rows) -> int:
    """Order-independent: the sum of the CRC-32 of each row's N-Triples text."""
    total = 0
    for row in rows:
        total += zlib.crc32(" ".join("UNDEF" if term is None else str(term) for term in row).encode())
    return total


def child(mode: str, graph: Path, threshold: int, data_dir: Path) -> dict:
    import gc

    import pyoxigraph as ox

    from cqels_endpoint.algebra.passes import optimize
    from cqels_endpoint.algebra.translate import to_algebra
    from cqels_endpoint.caches.delta import CacheDelta, bag_delta
    from cqels_endpoint.oxigraph.requests import open_store
    from cqels_endpoint.plan.compile import compile_plan
    from cqels_endpoint.query.parser import parse_query
    from cqels_endpoint.spark.job import SparkCacheEngine
    from cqels_endpoint.spark.session import SparkSessionHolder, build_session

    result: dict = {"mode": mode}
    started = time.perf_counter()
    store = open_store()
    store.load(graph, media_type="application/n-triples")
    result["load_s"] = time.perf_counter() - started
    result["quads"] = store.quad_count()
    spark = build_session("local[*]", "cqels-cache-parquet")
    engine = SparkCacheEngine(SparkSessionHolder.wrap(spark), data_dir=data_dir, parquet_rows=None if mode == "collect" else threshold)
    query = optimize(to_algebra(parse_query(QUERY)))
    (cache,) = compile_plan(query).caches
    result["schema"] = list(cache.schema)
    tiny = ox.Store()
    tiny.extend(ox.parse(graph.open("rb").readline(), format=ox.RdfFormat.N_TRIPLES))
    engine.build(cache, query, tiny)  # warms the JVM and the Python workers
    gc.collect()

    with PeakRss() as memory:
        started = time.perf_counter()
        build = engine.build(cache, query, store)
        result["build_s"] = time.perf_counter() - started
        result["build_peak_mb"] = memory.above_start_mb
        started = time.perf_counter()
        installed = sum(len(added) for added, _ in CacheDelta(build.rows, []).steps(1000))
        result["install_read_s"] = time.perf_counter() - started
    result["install_peak_mb"] = memory.above_start_mb
    result["rows"] = len(build.rows)
    result["parquet"] = type(build.rows).__name__ == "ParquetRows"
    assert installed == result["rows"]

    store.update(CHANGE)
    gc.collect()
    with PeakRss() as memory:
        started = time.perf_counter()
        rebuilt = engine.build(cache, query, store)
        changed = 0
        for added, removed in bag_delta(build.rows, rebuilt.rows).steps(1000):
            changed += len(added) + len(removed)
        result["rebuild_s"] = time.perf_counter() - started
    result["rebuild_peak_mb"] = memory.above_start_mb
    result["delta_rows"] = changed
    result["checksum"] = checksum(rebuilt.rows)
    del build, rebuilt
    gc.collect()
    result["files_left"] = sum(1 for _ in data_dir.rglob("*.parquet"))
    spark.stop()
    return result


def report(results: list[dict], args, triples: int, generate_s: float, load_before: str, load_after: str) -> str:
    collect, parquet = results
    lines = [
        "# Large Spark cache builds: collected to the driver vs. written as Parquet and read in parts",
        "",
        f"`python benchmarks/cache_parquet.py --triples {args.triples} --threshold {args.threshold} "
        f"--driver-memory {args.driver_memory}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).",
        "",
        f"Machine: {machine()}. `uptime` load average before: {load_before}; after: {load_after} "
        "(the machine is shared: other jobs ran at the same time).",
        "",
        f"Graph: {triples:,} generated triples ({collect['quads']:,} in the store, written in {generate_s:.0f} s, "
        f"loaded in {collect['load_s']:.0f} s / {parquet['load_s']:.0f} s). Cache: `?p :knows ?f . ?f :city ?c`, "
        f"schema {tuple(collect['schema'])}, **{collect['rows']:,} rows**; rebuild after one changed triple: "
        f"{collect['delta_rows']} changed rows. Both modes: same rows and checksum (checked).",
        "",
        "Memory: peak resident set size of the Python driver process above its size before the step",
        "(sampled every 10 ms); the store and the JVM are not in it.",
        "",
        "| step | collect: time | collect: peak RSS | Parquet: time | Parquet: peak RSS | time Parquet/collect |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, time_key, memory_key in (
        ("build (export + Spark job + collect or write)", "build_s", "build_peak_mb"),
        ("install read (steps of 1000 rows)", "install_read_s", "install_peak_mb"),
        ("rebuild + delta", "rebuild_s", "rebuild_peak_mb"),
    ):
        lines.append(
            f"| {label} | {collect[time_key]:.1f} s | {collect[memory_key]:,.0f} MB | {parquet[time_key]:.1f} s | "
            f"{parquet[memory_key]:,.0f} MB | {parquet[time_key] / collect[time_key]:.2f} |"
        )
    lines.append("")
    lines.append("The install peak is measured from before the build, so it includes the build's.")
    lines.append(f"Parquet files left after the builds were dropped: {parquet['files_left']}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=10_000_000)
    parser.add_argument("--threshold", type=int, default=500_000, help="parquet_rows of the Parquet mode")
    parser.add_argument("--graph", type=Path, help="reuse (or keep) the generated N-Triples file here")
    parser.add_argument("--driver-memory", default="4g", help="the Spark driver JVM's heap (local mode: all of Spark)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cache_parquet.md")
    parser.add_argument("--child", choices=["collect", "parquet"], help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.graph, args.threshold, args.data_dir)))
        return
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="cache-parquet-") as tmp:
        graph = args.graph or Path(tmp) / "graph.nt"
        started = time.perf_counter()
        if not graph.exists():
            triples = write_graph(graph, args.triples)
        else:
            triples = sum(1 for _ in graph.open())
        generate_s = time.perf_counter() - started
        print(f"graph: {triples} triples in {graph} ({generate_s:.1f} s)", flush=True)
        results = []
        for mode in ("collect", "parquet"):
            data_dir = Path(tmp) / f"data-{mode}"
            data_dir.mkdir()
            command = [sys.executable, __file__, "--child", mode, "--graph", str(graph), "--threshold", str(args.threshold), "--data-dir", str(data_dir)]
            # The JVM's heap is fixed when it starts: spark-submit's arguments, the same for both modes.
            env = {**os.environ, "PYSPARK_SUBMIT_ARGS": f"--driver-memory {args.driver_memory} pyspark-shell"}
            output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
            results.append(json.loads(output.strip().splitlines()[-1]))
            print(results[-1], flush=True)
    collect, parquet = results
    assert not collect["parquet"] and parquet["parquet"], results
    for key in ("rows", "checksum", "delta_rows"):
        assert collect[key] == parquet[key], (key, collect[key], parquet[key])
    load_after = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = report(results, args, triples, generate_s, load_before, load_after)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
