"""Where DEBS Q1's time goes: a CPU profile of the incremental replay, by kind of code.

    python benchmarks/profile_q1.py [--trips 5000] [--out benchmarks/results/profile_q1.md]

Run it on a build made with ``CQELS_CYTHON_PROFILE=1 python setup.py build_ext --inplace --force``
(cProfile sees compiled functions only then; without it their time is charged to their Python
callers, and the script says so in its output). The replay is ``benchmarks/debs.py``'s: one push per
trip, after a warm-up. Every profiled function is put in one of four kinds by where it is defined:

- *compiled*: the package's Cython modules (``cqels_endpoint/**/_*.pyx``);
- *interpreted*: the package's Python modules — the share the compiled per-event path has not
  reached yet;
- *native libraries*: pyoxigraph (Rust) and CPython built-ins (``{built-in method …}``), called by either;
- *harness*: this script and the benchmark's replay loop.

Shares are of the profile's total own time (tottime). cProfile adds a fixed cost to every call it
sees, and the profile build sees every small ``cdef`` function too, so both shares carry that
overhead: read them as where the work is, not as a wall-clock split.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
from collections import Counter
from pathlib import Path

from engine import machine

from cqels_endpoint import operators

# benchmarks/debs.py imports the tests' module of the same name: load it under another name.
_spec = importlib.util.spec_from_file_location("debs_benchmark", Path(__file__).with_name("debs.py"))
debs_benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(debs_benchmark)

PACKAGE = Path(operators.__file__).resolve().parents[1]
KINDS = ("compiled", "interpreted", "native libraries", "harness")


def kind_of(filename: str) -> str:
    if filename.endswith(".pyx"):
        return "compiled"
    path = Path(filename)
    if filename.startswith("~") or filename.startswith("<"):
        return "native libraries"
    if path.is_relative_to(PACKAGE) if path.is_absolute() else False:
        return "interpreted"
    if "benchmarks" in path.parts:
        return "harness"
    return "native libraries"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "profile_q1.md")
    args = parser.parse_args()
    bench = debs_benchmark
    text = bench.FILES["q1"].read_text(encoding="utf-8")
    bench.replay("incremental", text, bench.trip_events(bench.WARM_UP, bench.PREDICATES))
    events = bench.trip_events(args.trips, bench.PREDICATES)
    profiler = cProfile.Profile()
    profiler.enable()
    bench.replay("incremental", text, events)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    by_kind: Counter = Counter()
    functions = []
    for (filename, line, name), (_calls, primitive, own, _cumulative, _callers) in stats.items():
        kind = kind_of(filename)
        by_kind[kind] += own
        functions.append((own, primitive, kind, f"{Path(filename).name}:{line}({name})" if line else name))
    total = sum(by_kind.values())
    compiled_visible = by_kind["compiled"] > 0
    lines = [
        "# DEBS Q1: where the time goes (`benchmarks/profile_q1.py`)",
        "",
        f"Machine: {machine()}. {args.trips} trips, incremental mode, under cProfile ({total:.2f} s of own time in all). "
        "cProfile adds a fixed cost to every call it sees, compiled functions included in this build: the shares say where "
        "the work is, not a wall-clock split.",
        "" if compiled_visible else "**This build does not expose compiled functions to cProfile**: their time is charged to "
        "their Python callers. Rebuild with `CQELS_CYTHON_PROFILE=1 python setup.py build_ext --inplace --force`.",
        "",
        "| kind of code | share of own time | seconds |",
        "|---|---:|---:|",
        *(f"| {kind} | {by_kind[kind] / total:.1%} | {by_kind[kind]:.2f} |" for kind in KINDS),
        "",
        "The 25 functions with the most own time:",
        "",
        "| function | kind | calls | own time (s) | share |",
        "|---|---|---:|---:|---:|",
    ]
    for own, calls, kind, name in sorted(functions, reverse=True)[:25]:
        lines.append(f"| `{name}` | {kind} | {calls:,} | {own:.3f} | {own / total:.1%} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
