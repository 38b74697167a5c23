"""Which server in front of the endpoint: the same app under uvicorn, Hypercorn, Granian and waitress,
with Oxigraph server as the bar, on one dataset in one run.

    python benchmarks/http_servers.py [--triples 100000] [--runs 300] [--seconds 10]
                                      [--variants uvicorn,uvicorn-h11,hypercorn,granian,waitress]
                                      [--oxigraph PATH] [--out benchmarks/results/http_servers.md]

Each variant (``_serve_variant.py``) serves a copy of one store loaded with ``cqels load`` from the
BSBM-like dataset of ``endpoint.py``; Oxigraph server serves a copy loaded with ``oxigraph load``.
One at a time, on loopback: the point lookup (query 1 of ``endpoint.py``) on one keep-alive
connection, median and p90 of ``--runs``, and the server's CPU time per lookup (its process and
children, from ``/proc``: robust on a loaded machine, where a latency measures the neighbours too); ``/health`` likewise (not on Oxigraph, nor on the Flask app
alone); the light mix of
``endpoint.py`` from 8 client processes for ``--seconds``, q/s; 1,000 ``INSERT DATA`` on one
connection, req/s. Every answer is checked (200/204). Needs the ``bench`` extra (Hypercorn,
Granian, waitress).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import _endpoint_data as data
import endpoint as bench

HERE = Path(__file__).resolve().parent
VARIANTS = ("uvicorn", "uvicorn-h11", "hypercorn", "granian", "waitress")


@contextmanager
def variant_server(variant: str, store: Path, logs: Path):
    port = bench.free_port()
    command = [sys.executable, str(HERE / "_serve_variant.py"), variant, str(store), str(port)]
    with bench.serving(variant, command, port, logs / f"{variant}.log") as server:
        yield server


def cpu_seconds(root: int) -> float:
    """User + system CPU time of process ``root`` and its descendants (Granian serves from a child)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents, used = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / ticks
    family = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in family and pid not in family:
                family.add(pid)
                grew = True
    return sum(used.get(pid, 0.0) for pid in family)


def lookups(server: bench.Server, text: str, runs: int, path: str | None = None) -> dict:
    """Latencies on one connection, and the server's CPU time per request: the latter holds up on a
    loaded machine, where a latency also measures the other processes."""
    client = bench.Client(server.port)
    latencies = []
    cpu_before = None
    for i in range(20 + runs):
        if i == 20:
            cpu_before = cpu_seconds(server.process.pid)
        if path is None:
            status, body, elapsed = client.query(text)
        else:
            status, body, elapsed = client.send("GET", path)
        if status != 200:
            raise RuntimeError(f"{server.name}: {bench.describe(status, body)}")
        if i >= 20:
            latencies.append(elapsed)
    cpu = cpu_seconds(server.process.pid) - cpu_before
    client.close()
    return {"median_ms": bench.ms(statistics.median(latencies)), "p90_ms": bench.ms(bench.percentile(latencies, 0.9)),
            "cpu_us": cpu / runs * 1e6}


def measure(server: bench.Server, focus: data.Focus, args, health: bool) -> dict:
    figures = {"lookup": lookups(server, bench.POINT_LOOKUP.text(focus), args.runs)}
    if health:
        figures["health"] = lookups(server, "", args.runs, path="/health")
    figures["mix"] = bench.concurrent_mix(server, focus, args.seconds)
    figures["updates"] = bench.updates(server, focus)
    for phase in ("mix", "updates"):
        if figures[phase]["errors"]:
            raise RuntimeError(f"{server.name} {phase}: {figures[phase]['first_error']}")
    return figures


def _ratio(ours: float, theirs: float) -> str:
    # CPU time is read in clock ticks (10 ms): a short run may see none for Oxigraph.
    return f"{ours / theirs:.2f}×" if theirs else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--oxigraph", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "http_servers.md")
    args = parser.parse_args()
    oxigraph = bench.oxigraph_binary(args.oxigraph)
    cqels = Path(sys.executable).with_name("cqels")
    file = data.dataset(args.triples, bench.DATA_CACHE)
    focus = data.focus(args.triples)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="cqels-servers-") as work_dir:
        work = Path(work_dir)
        tools = bench.Tools(cqels, oxigraph, work, bench.has_timeout_option(oxigraph))
        loaded = {name: work / f"{name}-loaded" for name in bench.SERVERS}
        for name, store in loaded.items():
            bench.load(tools, name, file, store)
        for variant in args.variants.split(","):
            store = work / variant
            shutil.copytree(loaded["cqels"], store)
            print(f"{variant} ...", file=sys.stderr, flush=True)
            with variant_server(variant, store, work) as server:
                # The Flask app alone (waitress) has no /health: the ASGI app answers it.
                results[variant] = measure(server, focus, args, health=variant != "waitress")
            shutil.rmtree(store)
        store = work / "oxigraph"
        shutil.copytree(loaded["oxigraph"], store)
        print("oxigraph ...", file=sys.stderr, flush=True)
        with bench.started(tools, "oxigraph", store) as server:
            results["oxigraph"] = measure(server, focus, args, health=False)
        version = bench.tool_version(oxigraph)
    load = Path("/proc/loadavg").read_text().split()[0]
    bar = results["oxigraph"]
    lines = [
        "# The server in front of the endpoint (`benchmarks/http_servers.py`)",
        "",
        f"Machine: {bench.machine_line(version)}; load average {load} at the end. {args.triples:,} triples, "
        f"{time.strftime('%Y-%m-%d')}. Point lookup and `/health`: one keep-alive connection, {args.runs} runs "
        f"after 20 warm-up ones, ms; light mix: {bench.CLIENTS} client processes for {args.seconds:g} s; "
        f"updates: {bench.UPDATES:,} `INSERT DATA` on one connection. Ratios against Oxigraph server: "
        "time ÷ Oxigraph's time, Oxigraph's rate ÷ rate (so above 1 is slower either way).",
        "",
        "| server | lookup median | p90 | ÷ Oxigraph | server CPU per lookup (µs) | ÷ | /health median "
        "| CPU per /health (µs) | light mix q/s | ÷ | updates req/s | ÷ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in results.items():
        health = figures.get("health", {})
        health_cells = f"{health['median_ms']:.3f} | {health['cpu_us']:.0f}" if health else " | "
        lines.append(
            f"| {name} | {figures['lookup']['median_ms']:.3f} | {figures['lookup']['p90_ms']:.3f} | "
            f"{figures['lookup']['median_ms'] / bar['lookup']['median_ms']:.2f}× | {figures['lookup']['cpu_us']:.0f} | "
            f"{_ratio(figures['lookup']['cpu_us'], bar['lookup']['cpu_us'])} | "
            f"{health_cells} | {figures['mix']['rate']:,.0f} | "
            f"{bar['mix']['rate'] / figures['mix']['rate']:.2f}× | {figures['updates']['rate']:,.0f} | "
            f"{bar['updates']['rate'] / figures['updates']['rate']:.2f}× |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
