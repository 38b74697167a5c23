"""Push latency while a large static cache is rebuilt (issue 16, "No stall on rebuilds").

    python benchmarks/rebuild_stall.py [--triples 1000000] [--rate 200] [--baseline /tmp/base]
                                       [--out benchmarks/results/rebuild_stall.md]

The static data is ``--triples`` triples ``<s_i> :r <o_i>`` spread over 10 named graphs; one
continuous query joins a stream with all of it, so its static cache holds one row per triple::

    SELECT ?x ?g ?o WHERE { STREAM <s> [RANGE 1000ms] { ?x :p ?s } GRAPH ?g { ?s :r ?o } }

One thread pushes one-triple events at a steady ``--rate`` (each joining one cached row) for the
whole run, server-less (``Engine.push``), while the main thread, after a quiet period, makes two
writes and waits for each rebuild to be installed (``wait_for_caches``):

- *one triple*: one triple added to one graph: the rebuild computes every row again, one changes;
- *a tenth replaced*: one graph's triples replaced by as many new ones (``PUT`` of the graph): a
  tenth of the rows leave, as many enter.

Per phase (quiet, each rebuild from the write to the install done): pushes, and the push
latency p50 / p99 / max, as the time of the ``push`` call and as the time from the moment the
push was due (which also counts the pushes that could not start while an earlier one was stuck),
and the most CPU time one push took (``time.thread_time``: on a loaded machine a call's wall
time also counts its waits for a core and for the GIL);
and the cyclic garbage collector's runs that started in the phase (``gc.callbacks``): how many were
full (generation 2) collections, the longest run of any generation (wall time), the most CPU time
one run took (on a loaded machine the wall time also counts the wait for a core) and the wall time
of all; with, at the end, how many objects the collector tracks (``len(gc.get_objects())``).
The figures go to ``--out`` and a plot of the longest push call and wait per rebuild beside it
(``.png``). Each checkout runs in its own process (``--baseline``: another built checkout, e.g. the commit
before the change, made with ``git worktree add /tmp/base HEAD`` and the compiled extensions
copied in), one after the other on the same machine; both must end with caches of the same size.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import threading
import time
from pathlib import Path

from engine import machine, run_child

EX = "http://ex.org/"
STREAM = EX + "s"
GRAPHS = 10
QUERY = (
    f"PREFIX : <{EX}>\nSELECT ?x ?g ?o WHERE {{ STREAM <{STREAM}> [RANGE 1000ms] {{ ?x :p ?s }} "
    "GRAPH ?g { ?s :r ?o } }"
)


def quads(triples: int) -> str:
    return "".join(f"<{EX}s{i}> <{EX}r> <{EX}o{i}> <{EX}g{i % GRAPHS}> .\n" for i in range(triples))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(triples: int, rate: float, quiet_s: float) -> dict:
    """Runs the measurement with the ``cqels_endpoint`` on ``sys.path``; returns the figures."""
    import cqels_endpoint
    from cqels_endpoint import Engine
    from cqels_endpoint.oxigraph.requests import open_store

    started = time.perf_counter()
    store = open_store()
    store.load(quads(triples).encode(), media_type="application/n-quads")
    load_s = time.perf_counter() - started
    engine = Engine(store, rebuild_debounce_ms=0)
    started = time.perf_counter()
    query = engine.register(QUERY, name="q")
    register_s = time.perf_counter() - started
    # (due, started, ended, CPU): perf_counter seconds, and the CPU time of the push (thread_time)
    pushes: list[tuple[float, float, float, float]] = []
    # (started, wall ms, CPU ms of its thread, generation) of each cyclic GC run: on a loaded
    # machine a run's wall time also counts the time its thread waited for a core.
    collections: list[tuple[float, float, float, int]] = []
    collecting: dict[int, tuple[float, float]] = {}

    def on_gc(phase: str, info: dict) -> None:
        thread = threading.get_ident()
        if phase == "start":
            collecting[thread] = (time.perf_counter(), time.thread_time())
        elif thread in collecting:
            begun, cpu = collecting.pop(thread)
            collections.append(
                (begun, (time.perf_counter() - begun) * 1000, (time.thread_time() - cpu) * 1000, info["generation"])
            )

    gc.callbacks.append(on_gc)
    stop = threading.Event()

    def pusher() -> None:
        period, origin, k = 1 / rate, time.perf_counter(), 0
        while not stop.is_set():
            due = origin + k * period
            k += 1
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            begun, cpu = time.perf_counter(), time.thread_time()
            engine.push(STREAM, f"<{EX}x{k}> <{EX}p> <{EX}s{k * 7919 % triples}> .")
            pushes.append((due, begun, time.perf_counter(), time.thread_time() - cpu))

    thread = threading.Thread(target=pusher, name="pusher")
    thread.start()
    phases: dict[str, tuple[float, float]] = {}
    time.sleep(quiet_s)
    phases["quiet"] = (time.perf_counter() - quiet_s, time.perf_counter())
    writes = {
        "one triple": lambda: store.post_graph(EX + "g1", f"<{EX}new> <{EX}r> <{EX}o-new> .", "application/n-triples"),
        "a tenth replaced": lambda: store.put_graph(EX + "g0", tenth, "application/n-triples"),
    }
    # The triples of graph g0, each with a new object.
    tenth = "".join(f"<{EX}s{i}> <{EX}r> <{EX}n{i}> .\n" for i in range(0, triples, GRAPHS))
    write_s = {}
    try:
        for name, write in writes.items():
            begun = time.perf_counter()
            write()
            write_s[name] = time.perf_counter() - begun
            if not engine.wait_for_caches(600):
                raise SystemExit(f"the rebuild after {name!r} did not finish in 600 s")
            phases[name] = (begun, time.perf_counter())
            time.sleep(1)
    finally:
        stop.set()
        thread.join()
        gc.callbacks.remove(on_gc)
    [stats] = engine.cache_stats()
    size = len(query.snapshot())
    tracked = len(gc.get_objects())
    engine.close()
    result = {
        "package": str(Path(cqels_endpoint.__file__).parent),
        "load_s": load_s,
        "register_s": register_s,
        "cache_rows": stats["rows"],
        "rebuilds": stats["rebuilds"],
        "snapshot_rows": size,
        "write_s": write_s,
        "tracked": tracked,
        "phases": {},
    }
    for name, (begin, end) in phases.items():
        taken = [push for push in pushes if begin <= push[0] <= end]
        calls = [(ended - begun) * 1000 for _, begun, ended, _ in taken]
        due_to_done = [(ended - due) * 1000 for due, _, ended, _ in taken]
        runs = [(ms, cpu, generation) for started, ms, cpu, generation in collections if begin <= started <= end]
        result["phases"][name] = {
            "seconds": end - begin,
            "pushes": len(taken),
            "call": [percentile(calls, 0.5), percentile(calls, 0.99), max(calls, default=float("nan"))],
            "from_due": [percentile(due_to_done, 0.5), percentile(due_to_done, 0.99), max(due_to_done, default=float("nan"))],
            "cpu_max": max((cpu * 1000 for *_, cpu in taken), default=float("nan")),
            "full_gcs": sum(1 for _, _, generation in runs if generation == 2),
            "gc_max": max((ms for ms, _, _ in runs), default=0.0),
            "gc_cpu_max": max((cpu for _, cpu, _ in runs), default=0.0),
            "gc_total": sum(ms for ms, _, _ in runs),
        }
    return result


def run_checkout(checkout: Path, args: argparse.Namespace) -> dict:
    return run_child(checkout, __file__, "--child", "--triples", args.triples, "--rate", args.rate, "--quiet-s", args.quiet_s)


def report(runs: dict[str, dict], args: argparse.Namespace, load: str) -> str:
    sizes = {(r["cache_rows"], r["rebuilds"]) for r in runs.values()}
    if len(sizes) != 1:
        raise SystemExit(f"the checkouts ended with different caches: {runs}")
    lines = [
        "# Push latency during a large static cache rebuild",
        "",
        f"Machine: {machine()}; load average before/after: {load}. Produced by "
        f"`python benchmarks/rebuild_stall.py --triples {args.triples} --rate {args.rate:g}"
        + (f" --baseline {args.baseline}`" if args.baseline else "`")
        + f"; one push thread at {args.rate:g} events/s, server-less, cache of {next(iter(sizes))[0]:,} rows.",
        "",
        "| checkout | phase | seconds | pushes | call p50 (ms) | p99 | max | most CPU (ms) | from due p50 (ms) | p99 | max "
        "| full GCs | longest GC (ms) | most GC CPU (ms) | all GC (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, run in runs.items():
        for phase, figures in run["phases"].items():
            call, due = figures["call"], figures["from_due"]
            lines.append(
                f"| {label} | {phase} | {figures['seconds']:.1f} | {figures['pushes']} | "
                + " | ".join(f"{v:.2f}" for v in (*call, figures["cpu_max"], *due))
                + f" | {figures['full_gcs']} | {figures['gc_max']:.1f} | {figures['gc_cpu_max']:.1f} | {figures['gc_total']:.0f} |"
            )
    lines += [
        "",
        "| checkout | load (s) | register (s) | write one triple (s) | write a tenth (s) | GC-tracked objects at the end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, run in runs.items():
        writes = run["write_s"]
        lines.append(
            f"| {label} | {run['load_s']:.1f} | {run['register_s']:.1f} | {writes['one triple']:.2f} | "
            f"{writes['a tenth replaced']:.2f} | {run['tracked']:,} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--quiet-s", type=float, default=3.0)
    parser.add_argument("--baseline", type=Path, help="another built checkout, run the same way before this one")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "rebuild_stall.md")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.triples, args.rate, args.quiet_s)))
        return
    before = " ".join(f"{v:.1f}" for v in os.getloadavg())
    runs = {}
    if args.baseline is not None:
        runs[f"before ({args.baseline})"] = run_checkout(args.baseline.resolve(), args)
    runs["this checkout"] = run_checkout(Path(__file__).resolve().parent.parent, args)
    after = " ".join(f"{v:.1f}" for v in os.getloadavg())
    text = report(runs, args, f"{before} / {after}")
    args.out.write_text(text)
    plot(runs, args.out.with_suffix(".png"))
    print(text)


def plot(runs: dict[str, dict], path: Path) -> None:
    """Per checkout and rebuild, the longest push call and the longest wait from due, against the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phases = ("one triple", "a tenth replaced")
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, (measure, title) in zip(axes, (("call", "longest push call"), ("from_due", "longest push from due"))):
        width = 0.8 / len(runs)
        for k, (label, run) in enumerate(runs.items()):
            values = [run["phases"][phase][measure][2] for phase in phases]
            bars = axis.bar([i + k * width for i in range(len(phases))], values, width, label=label)
            axis.bar_label(bars, fmt="%.0f", fontsize=8)
        axis.axhline(50, color="grey", linestyle="--", linewidth=1, label="target 50 ms")
        axis.set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(phases))], phases)
        axis.set_yscale("log")
        top = max(run["phases"][phase][measure][2] for run in runs.values() for phase in phases)
        axis.set_ylim(top=top * 20)  # room for the legend above the bars
        axis.set_ylabel("ms")
        axis.set_title(f"{title} during the rebuild")
        axis.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
