"""Static cache rebuilds on both cache engines, and ``cqels load --spark`` against the normal load.

    python benchmarks/cache_rebuild.py [--triples 10000 100000 1000000] [--repeat 3]
                                       [--out benchmarks/results/cache_rebuild.md]

The static graph is a generated floor plan in the named graph ``lv:`` with ``triples / 4`` rooms,
each with ``lv:name``, ``lv:desc`` and two ``lv:connected`` edges. Two continuous queries shaped like
the conference queries Q1 and Q2 (``examples/queries``) each have one static cache, a BGP with a
join::

    Q1: GRAPH lv: { ?loc lv:name ?locName . ?loc lv:desc ?locDesc }     (one row per room)
    Q2: GRAPH lv: { ?loc1 lv:connected ?loc2 . ?loc2 lv:name ?name2 }   (two rows per room)

For each size, the same store gets one ``Engine`` per cache engine (``local``: pyoxigraph in the
process; ``spark``: the Spark job on ``local[*]``), both in the same run. Each registers Q1 and Q2
(the initial builds), then ``--repeat`` times one triple is inserted into ``lv:`` and the engine
waits for both caches to be swapped in. Reported per engine: the build time of one cache as the
rebuild manager measured it (``duration_ms`` of ``Engine.cache_stats``; min / median over the
rebuilds of both queries) and the time from the write to both caches swapped in (median), and
the ratio spark / local. Both engines must end with caches of identical size, checked before
anything is reported. The first Spark build of a run also warms the JVM; it is the initial build,
never one of the measured rebuilds.

Then the largest graph is written as N-Triples and loaded into fresh stores twice, by the normal
load (pyoxigraph's parser and loader, one transaction) and by the Spark pipeline of
``cqels load --spark`` (parse and encode on Spark, sort, load in runs); wall time of each and
their ratio. Sizes that do not finish within ``--budget-s`` are dropped and reported as such.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from engine import machine, pyplot

from cqels_endpoint import Engine
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.spark import cache_engine
from static_store import StaticStore

LV = "http://deri.org/floorplan/"
STREAM = "http://deri.org/streams/rfid"
Q1 = f"""PREFIX lv: <{LV}>
SELECT ?person ?locName ?locDesc WHERE {{
  STREAM <{STREAM}> [NOW] {{ ?person lv:detectedAt ?loc }}
  GRAPH lv: {{ ?loc lv:name ?locName . ?loc lv:desc ?locDesc }}
}}"""
Q2 = f"""PREFIX lv: <{LV}>
SELECT ?person ?loc2 ?name2 WHERE {{
  STREAM <{STREAM}> [NOW] {{ ?person lv:detectedAt ?loc1 }}
  GRAPH lv: {{ ?loc1 lv:connected ?loc2 . ?loc2 lv:name ?name2 }}
}}"""


def floor_plan(triples: int) -> str:
    """N-Triples of ``triples`` triples (4 per room); the rooms form a ring with one chord each."""
    rooms = triples // 4
    lines = []
    for r in range(rooms):
        room = f"<{LV}room{r}>"
        lines.append(f'{room} <{LV}name> "Room {r}" .')
        lines.append(f'{room} <{LV}desc> "Room {r}, floor {r % 12}" .')
        lines.append(f"{room} <{LV}connected> <{LV}room{(r + 1) % rooms}> .")
        lines.append(f"{room} <{LV}connected> <{LV}room{(r * 7 + 3) % rooms}> .")
    return "\n".join(lines) + "\n"


def measure_engine(store: StaticStore, engine_name: str, cache, repeat: int) -> dict:
    engine = Engine(store, cache_engine=cache, rebuild_debounce_ms=0)
    try:
        started = time.perf_counter()
        engine.register(Q1, name="q1")
        engine.register(Q2, name="q2")
        initial_s = time.perf_counter() - started
        builds, swaps = [], []
        for i in range(repeat):
            before = {e["query"]: e["rebuilds"] for e in engine.cache_stats()}
            started = time.perf_counter()
            store.update(f'INSERT DATA {{ GRAPH <{LV}> {{ <{LV}{engine_name}{i}> <{LV}name> "extra" }} }}')
            if not engine.wait_for_caches(3600):
                raise RuntimeError(f"the {engine_name} rebuilds did not finish")
            swaps.append(time.perf_counter() - started)
            stats = engine.cache_stats()
            failed = [e for e in stats if e["rebuilds"] != before[e["query"]] + 1]
            if failed:
                raise RuntimeError(f"{engine_name}: a rebuild failed: {failed}")
            builds.extend(e["duration_ms"] for e in stats)
        rows = {e["query"]: e["rows"] for e in engine.cache_stats()}
        return {"initial_s": initial_s, "builds_ms": builds, "swaps_s": swaps, "rows": rows}
    finally:
        engine.close()


def run_size(triples: int, repeat: int, spark_cache) -> dict:
    store = open_store()
    store.load(floor_plan(triples).encode(), media_type="application/n-triples", graph=LV)
    results = {"quads": len(store)}
    for name, cache in (("local", cache_engine("local")), ("spark", spark_cache)):
        results[name] = measure_engine(store, name, cache, repeat)
    store.close()
    # The inserted names join with no room's desc nor edge, so both engines must end with the same rows.
    local, spark = results["local"]["rows"], results["spark"]["rows"]
    if local["q1"] != spark["q1"] or spark["q2"] != local["q2"]:
        raise RuntimeError(f"the engines disagree on the cache sizes: local {local}, spark {spark}")
    return results


def measure_load(triples: int, spark) -> dict:
    from cqels_endpoint.spark.bulk_load import spark_load

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"floorplan-{triples}.nt"
        path.write_text(floor_plan(triples), encoding="utf-8")
        times = {}
        sizes = {}
        for name in ("normal", "spark"):
            store = open_store(Path(scratch) / f"store-{name}")
            started = time.perf_counter()
            if name == "normal":
                store.load(path)
            else:
                spark_load(store, path, spark)
            times[name] = time.perf_counter() - started
            sizes[name] = len(store)
            store.close()
        if sizes["normal"] != sizes["spark"]:
            raise RuntimeError(f"the loads disagree: {sizes}")
        return {"times": times, "quads": sizes["normal"]}


def report(results: dict[int, dict], dropped: list[str], load: dict | None, repeat: int, args) -> str:
    lines = [
        "# Static cache rebuilds: local (pyoxigraph) vs Spark cache engine",
        "",
        f"Machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the end. Spark {_spark_version()} on "
        f"`local[*]`. Produced by `python benchmarks/cache_rebuild.py --triples {' '.join(map(str, args.triples))} "
        f"--repeat {repeat}`; {repeat} rebuilds of each of the two caches per engine and size.",
        "",
        "| static triples | engine | cache rows (Q1, Q2) | initial build of both (s) | one cache build min (ms) "
        "| median (ms) | write → both swapped median (s) | median ratio spark/local |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for triples, result in results.items():
        local_median = statistics.median(result["local"]["builds_ms"])
        for name in ("local", "spark"):
            r = result[name]
            median = statistics.median(r["builds_ms"])
            ratio = f"{median / local_median:.1f}×" if name == "spark" else ""
            lines.append(
                f"| {triples:,} | {name} | {r['rows']['q1']:,}, {r['rows']['q2']:,} | {r['initial_s']:.2f} | "
                f"{min(r['builds_ms']):.0f} | {median:.0f} | {statistics.median(r['swaps_s']):.2f} | {ratio} |"
            )
    if dropped:
        lines += ["", "Dropped: " + "; ".join(dropped) + "."]
    if load is not None:
        t = load["times"]
        lines += [
            "",
            f"## Bulk load of {load['quads']:,} triples (N-Triples, on-disk store)",
            "",
            "| load | wall time (s) | ratio to normal |",
            "|---|---:|---:|",
            f"| normal (`cqels load`) | {t['normal']:.1f} | 1.0× |",
            f"| Spark (`cqels load --spark`) | {t['spark']:.1f} | {t['spark'] / t['normal']:.1f}× |",
        ]
    return "\n".join(lines) + "\n"


def _spark_version() -> str:
    import pyspark

    return pyspark.__version__


def plot(results: dict[int, dict], out: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    sizes = list(results)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in ("local", "spark"):
        ax.plot(sizes, [statistics.median(results[s][name]["builds_ms"]) for s in sizes], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("static triples")
    ax.set_ylabel("one cache build, median (ms)")
    ax.set_title("Static cache rebuild time by cache engine")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=1800.0, help="skip the remaining sizes after this")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cache_rebuild.md")
    args = parser.parse_args()

    spark_cache = cache_engine("spark")  # local[*] unless CQELS_SPARK_MASTER says otherwise
    spark = spark_cache.session_holder.get()
    started = time.perf_counter()
    results: dict[int, dict] = {}
    dropped: list[str] = []
    for triples in args.triples:
        if time.perf_counter() - started > args.budget_s:
            dropped.append(f"{triples:,} triples (over the {args.budget_s:.0f} s budget)")
            continue
        print(f"{triples:,} triples ...", file=sys.stderr, flush=True)
        results[triples] = run_size(triples, args.repeat, spark_cache)
    load = measure_load(max(results), spark) if results else None
    text = report(results, dropped, load, args.repeat, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    plot(results, args.out.with_suffix(".png"))
    print(text)
    spark_cache.session_holder.stop()


if __name__ == "__main__":
    main()
