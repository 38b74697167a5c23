"""Instances of one template: one shared operator graph against one plan per instance.

    python benchmarks/instances.py [--instances 10 100 1000 10000] [--events 2000]
                                   [--per-instance-max 1000] [--baseline /work/base]
                                   [--out benchmarks/results/instances.md]

The template is ``examples/queries/template-where-is.rq``: where is this person, and who else was
seen there in the last 3 s (two stream triple patterns over the RFID stream, joined with the
floorplan cache), with ``?person`` as its parameter. For each count N, two fresh processes each register N instances
(persons 0…N-1) and push the same ``--events`` detections of 2N people (so half of the
detections concern no instance) in six rooms, 0–400 ms apart:

- ``shared``: ``Engine.template`` then ``Engine.register_instances``, what ``PUT /queries/{name}``
  and ``POST /queries/{name}/instances`` do — one plan with an instance table
  (``cqels_endpoint.engine.instances``);
- ``per-instance``: ``Engine.register`` of each instance's text (the template with its one-row
  VALUES first in the WHERE), one plan per instance; the window states are still shared
  (``runtime.sharing``), as they were before the instance groups.

``shared`` also runs in ``--baseline`` (a built checkout, run with ``PYTHONPATH`` set to it: the
commit before issue 30 reached every instance with every event); ``per-instance`` runs only up to
``--per-instance-max`` instances (at 1,000 it already takes ~0.1 s an event). Reported per mode:
registration time, mean and p99 time per event (all instances evaluated), and
the resident memory the process gained from before the registration to after the last event
(``ru_maxrss``; each mode runs in its own process so the two do not share a heap). Every run must
emit the same emissions for every instance (a digest is compared) before anything is reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import sys
import time
from pathlib import Path

from engine import machine, p99, run_child

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.stored_queries import FLOORPLAN, LV, RFID, ROOMS, TEMPLATE, person, values_first  # noqa: E402


def child(mode: str, count: int, events: int) -> dict:
    """One mode in this process: the figures and a digest of every instance's emissions."""
    import pyoxigraph as ox

    from cqels_endpoint import Engine
    from cqels_endpoint.oxigraph.requests import open_store

    store = open_store()
    store.load(str(FLOORPLAN))
    engine = Engine(store, cache_engine="local")
    batch = [(f"where/{i}", {"person": ox.NamedNode(person(i))}) for i in range(count)]
    # Each instance's text is written before the clock starts, in both modes so that both start
    # with the grammar loaded: only the registration is measured.
    texts = [values_first(TEMPLATE, terms) for _name, terms in batch]
    rng = random.Random(5)
    stream, clock = [], 1_000
    for _ in range(events):
        clock += rng.randrange(0, 400)
        who, room = rng.randrange(2 * count), ROOMS[rng.randrange(len(ROOMS))]
        stream.append((clock, f"<{person(who)}> <{LV}detectedAt> <{LV}{room}> ."))

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    if mode == "shared":
        # The template is parsed once, as a PUT does; its parsing counts in the registration.
        queries = engine.register_instances(engine.template(TEMPLATE), batch, group="where")
    else:
        queries = [engine.register(text, name) for (name, _terms), text in zip(batch, texts, strict=True)]
    registration_s = time.perf_counter() - started
    digests = {q.name: hashlib.sha256() for q in queries}
    for query in queries:
        digest = digests[query.name]
        query.subscribe(lambda e, d=digest: d.update(repr((e.time, sorted(sorted((k, str(v)) for k, v in r.items()) for r in e.rows))).encode()))
    per_event = []
    for at, data in stream:
        tick = time.perf_counter()
        engine.push(RFID, data, time=at)
        per_event.append(time.perf_counter() - tick)
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    emissions = sum(q.emitted for q in queries)
    combined = hashlib.sha256("".join(d.hexdigest() for _, d in sorted(digests.items())).encode()).hexdigest()
    engine.close()
    return {
        "mode": mode,
        "instances": count,
        "registration_s": registration_s,
        "event_mean_ms": 1000 * statistics.fmean(per_event),
        "event_p99_ms": 1000 * p99(per_event),
        "rss_gained_mb": (rss_after - rss_before) / 1024,
        "emissions": emissions,
        "digest": combined,
    }


def run_mode(mode: str, count: int, events: int, checkout: Path = ROOT) -> dict:
    figures = run_child(checkout, __file__, "--child", mode, "--instances", count, "--events", events)
    if checkout != ROOT:
        figures["mode"] = f"{mode} (baseline)"
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--per-instance-max", type=int, default=1000)
    parser.add_argument("--baseline", type=Path, default=Path("/work/base"))
    parser.add_argument("--child", choices=["shared", "per-instance"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "instances.md")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.instances[0], args.events)))
        return

    rows = []
    for count in args.instances:
        runs = [run_mode("shared", count, args.events), run_mode("shared", count, args.events, args.baseline)]
        if count <= args.per_instance_max:
            runs.append(run_mode("per-instance", count, args.events))
        if len({(figures["digest"], figures["emissions"]) for figures in runs}) != 1:
            raise SystemExit(f"{count} instances: the runs emitted different results")
        rows.append((count, runs))
        print(f"{count} instances: " + "; ".join(f"{f['mode']} {f['event_mean_ms']:.3f} ms/event, {f['rss_gained_mb']:.1f} MB" for f in runs), flush=True)

    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    lines = [
        "# Instances of one template: one shared plan (this checkout and the baseline) vs one plan per instance",
        "",
        f"`python benchmarks/instances.py --instances {' '.join(map(str, args.instances))} --events {args.events}`, "
        f"one run; baseline `{args.baseline}` (the commit before issue 30); per-instance plans up to "
        f"{args.per_instance_max} instances; {machine()}, load average {load} at the end. Every run emitted "
        "identical results for every instance.",
        "",
        "| instances | mode | registration (s) | mean per event (ms) | p99 per event (ms) | memory gained (MB) | emissions |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for count, runs in rows:
        for figures in runs:
            lines.append(
                f"| {count} | {figures['mode']} | {figures['registration_s']:.2f} | {figures['event_mean_ms']:.3f} | "
                f"{figures['event_p99_ms']:.3f} | {figures['rss_gained_mb']:.1f} | {figures['emissions']} |"
            )
    lines += ["", "Mean time per event against the shared plan of this checkout:", "",
              "| instances | baseline shared | per-instance |", "|---:|---:|---:|"]
    for count, runs in rows:
        ours = runs[0]["event_mean_ms"]
        alone = f"{runs[2]['event_mean_ms'] / ours:.1f}×" if len(runs) > 2 else "not run"
        lines.append(f"| {count} | {runs[1]['event_mean_ms'] / ours:.1f}× | {alone} |")
    args.out.write_text("\n".join(lines) + "\n")
    _plot(rows, args.out.with_suffix(".png"))
    print(f"wrote {args.out}")


def _plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for label, index in (("shared plan", 0), ("shared plan, baseline", 1), ("plan per instance", 2)):
        points = [(count, runs[index]) for count, runs in rows if len(runs) > index]
        left.plot([c for c, _ in points], [f["event_mean_ms"] for _, f in points], marker="o", label=label)
        right.plot([c for c, _ in points], [f["rss_gained_mb"] for _, f in points], marker="o", label=label)
    left.set_yscale("log")
    for axis, title in ((left, "mean time per event (ms)"), (right, "memory gained (MB)")):
        axis.set_xscale("log")
        axis.set_xlabel("instances of the template")
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
