"""SPARQL JSON emissions written from term ids against decoding the rows and serialising terms.

    python benchmarks/emission_json.py [--sizes 10 100 1000] [--pushes 400]
                                       [--out benchmarks/results/emission_json.md]

What an SSE/NDJSON subscriber costs per emission. One RSTREAM query over a count window of n
distinct triples, so every push emits Γ = n rows of three kinds of term (an IRI, a language-tagged
literal, an integer)::

    SELECT ?s ?label ?n WHERE { STREAM <s> [TRIPLES n] { ?s <p> ?o } BIND(…) }

registered twice on one engine, each with one subscriber that renders every emission the moment it
arrives (the HTTP hub renders it once per framing and shares it):

- **terms**: a plain subscriber, so the rows are decoded to pyoxigraph terms, then
  ``json.dumps(emission.to_json())`` — the path every emission took before issue 15;
- **json**: a ``json_only`` subscriber (what the HTTP hub is), so the rows stay ids and
  ``emission.json_text()`` writes them from the per-id texts of ``engine.emission.BindingsWriter``.

Both render the same text (checked on every push). The timed unit is one ``engine.push`` with the
rendering its subscribers do; the two queries are pushed alternately in rounds of 50, after 50
warm-up pushes, so a change of load hits both alike. Figures: median µs per push.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from engine import machine, pyplot, save_loglog

from cqels_endpoint import Engine

EX = "http://bench.example.org/"
STREAM = EX + "stream"
ROUND = 50


def query(size: int) -> str:
    return (
        f"SELECT ?s ?label ?o WHERE {{ STREAM <{STREAM}> [TRIPLES {size}] {{ ?s <{EX}p> ?o }} "
        f'BIND(STRLANG(CONCAT("item ", STR(?o)), "en") AS ?label) }}'
    )


def event(i: int) -> str:
    return f"<{EX}item/{i}> <{EX}p> {i} ."


def measure(size: int, pushes: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"terms": [], "json": []}
    engines = {}
    rendered: dict[str, list[str]] = {"terms": [], "json": []}
    for kind in samples:
        engine = Engine()
        registered = engine.register(query(size), name="q", r2s="RSTREAM")
        if kind == "terms":
            registered.subscribe(lambda e: rendered["terms"].append(json.dumps(e.to_json(), ensure_ascii=False)))
        else:
            registered.subscribe(lambda e: rendered["json"].append(e.json_text()), json_only=True)
        for i in range(size):  # fill the window, untimed
            engine.push(STREAM, event(i), time=i)
        engines[kind] = engine
    time_of = size
    for done in range(0, pushes + ROUND, ROUND):
        for kind, engine in engines.items():
            for i in range(time_of, time_of + ROUND):
                started = time.perf_counter()
                engine.push(STREAM, event(i), time=i)
                elapsed = time.perf_counter() - started
                if done:  # the first round warms up
                    samples[kind].append(elapsed * 1e6)
        if rendered["terms"] != rendered["json"]:
            raise SystemExit(f"n={size}: the two paths rendered different text")
        rendered["terms"].clear()
        rendered["json"].clear()
        time_of += ROUND
    for engine in engines.values():
        engine.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1_000])
    parser.add_argument("--pushes", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "emission_json.md")
    args = parser.parse_args()
    where = machine()
    load_before = os.getloadavg()[0]
    results = {}
    for size in args.sizes:
        samples = results[size] = measure(size, args.pushes)
        terms, by_ids = statistics.median(samples["terms"]), statistics.median(samples["json"])
        print(f"n={size:>6,}  terms {terms:10.1f} µs  json {by_ids:10.1f} µs  ratio {terms / by_ids:5.2f}×", flush=True)
    load_after = os.getloadavg()[0]
    lines = [
        "# Emissions as SPARQL JSON: written from ids vs decoded (`benchmarks/emission_json.py`)",
        "",
        f"Machine: {where}; load average {load_before:.2f} before, {load_after:.2f} after.",
        "",
        "One RSTREAM query emitting Γ = n rows (IRI, language-tagged literal, integer) at every push, "
        "rendered by its one subscriber. *terms*: rows decoded, `json.dumps(emission.to_json())`; *json*: "
        "a `json_only` subscriber (the HTTP hub), rows written from ids by `BindingsWriter`. Same text, "
        f"checked on every push. Median µs per push (rendering included) over {args.pushes} pushes each, "
        f"alternating in rounds of {ROUND}.",
        "",
        "| rows per emission | terms (µs) | json from ids (µs) | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for size, samples in results.items():
        terms, by_ids = statistics.median(samples["terms"]), statistics.median(samples["json"])
        lines.append(f"| {size:,} | {terms:,.1f} | {by_ids:,.1f} | {terms / by_ids:.2f}× |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    plot(results, args.out.with_suffix(".png"))


def plot(results: dict[int, dict[str, list[float]]], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    sizes = list(results)
    figure, axis = plt.subplots(figsize=(6, 4))
    for kind, label in (("terms", "decoded, json.dumps(to_json())"), ("json", "written from ids (json_text)")):
        axis.plot(sizes, [statistics.median(results[size][kind]) for size in sizes], marker="o", label=label)
    save_loglog(figure, axis, path, "rows per emission (RSTREAM Γ)", "µs per push, rendering included (median)",
                "SPARQL JSON emissions")


if __name__ == "__main__":
    main()
