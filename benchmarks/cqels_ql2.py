"""CQELS-QL 2.0 constructs per event: CEP SEQ and directional windows, incremental vs re-evaluation.

    python benchmarks/cqels_ql2.py [--events 20000] [--oracle-events 2000]
                                   [--out benchmarks/results/cqels_ql2.md]

A vehicle-alert stream (one event per 50 ms, a random one of four alert types on one of 20
vehicles, as in the specification's LossOfControl example) runs through each query below in the
incremental mode (``--events`` events) and in the recompute mode, the oracle (the first
``--oracle-events`` of them: re-evaluation is too slow for more). Each event is one
``engine.push``; the figure is the mean µs per push over the run, with one ISTREAM subscriber
(the rows that enter: the incremental work, not the size of Γ).
The ratio is recompute / incremental per push, measured in the same run on the same prefix.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

from engine import machine

from cqels_endpoint import Engine

VSS = "https://covesa.global/vss#"
STREAM = "urn:cqels:stream:VehicleSignals"
PREFIX = f"PREFIX vss: <{VSS}>\n"
ALERTS = ("HighSpeedAlert", "AggressiveDrivingAlert", "HardBrakingAlert", "LaneDepartureAlert")

QUERIES = {
    "SEQ(?e1 ; ?e2 ; ?e3) [RANGE 20s]": """SELECT ?v FROM STREAM VehicleSignals [RANGE 20s]
WHERE { ?e1 vss:hasAlert vss:HighSpeedAlert ; vss:vehicle ?v .
        ?e2 vss:hasAlert vss:AggressiveDrivingAlert ; vss:vehicle ?v2 .
        ?e3 vss:hasAlert vss:HardBrakingAlert ; vss:vehicle ?v3 .
        FILTER(?v = ?v2 && ?v2 = ?v3) FILTER(SEQ(?e1 ; ?e2 ; ?e3)) }""",
    "same, ?v shared by the three steps (a join)": """SELECT ?v FROM STREAM VehicleSignals [RANGE 20s]
WHERE { ?e1 vss:hasAlert vss:HighSpeedAlert ; vss:vehicle ?v .
        ?e2 vss:hasAlert vss:AggressiveDrivingAlert ; vss:vehicle ?v .
        ?e3 vss:hasAlert vss:HardBrakingAlert ; vss:vehicle ?v . FILTER(SEQ(?e1 ; ?e2 ; ?e3)) }""",
    "SEQ(?e1 ; NOT ?x ; ?e3) [RANGE 20s]": """SELECT ?e1 ?e3 FROM STREAM VehicleSignals [RANGE 20s]
WHERE { ?e1 vss:hasAlert vss:HighSpeedAlert . ?x vss:hasAlert vss:LaneDepartureAlert .
        ?e3 vss:hasAlert vss:HardBrakingAlert . FILTER(SEQ(?e1 ; NOT ?x ; ?e3)) }""",
    "same, one vehicle, no ?x of it (a guard on the gap)": """SELECT ?e1 ?e3 FROM STREAM VehicleSignals [RANGE 20s]
WHERE { ?e1 vss:hasAlert vss:HighSpeedAlert ; vss:vehicle ?v1 .
        ?x vss:hasAlert vss:LaneDepartureAlert ; vss:vehicle ?vx .
        ?e3 vss:hasAlert vss:HardBrakingAlert ; vss:vehicle ?v3 .
        FILTER(?vx = ?v1 && ?v3 = ?v1) FILTER(SEQ(?e1 ; NOT ?x ; ?e3)) }""",
    "same, the gap's guard on ?e3 (checked when ?e3 is bound)": """SELECT ?e1 ?e3 FROM STREAM VehicleSignals [RANGE 20s]
WHERE { ?e1 vss:hasAlert vss:HighSpeedAlert ; vss:vehicle ?v1 .
        ?x vss:hasAlert vss:LaneDepartureAlert ; vss:vehicle ?vx .
        ?e3 vss:hasAlert vss:HardBrakingAlert ; vss:vehicle ?v3 .
        FILTER(?vx = ?v3 && ?v3 = ?v1) FILTER(SEQ(?e1 ; NOT ?x ; ?e3)) }""",
    "[PAST 10s FUTURE 5s STEP 1s] COUNT per vehicle": """SELECT ?v (COUNT(*) AS ?n)
FROM STREAM VehicleSignals [PAST 10s FUTURE 5s STEP 1s] WHERE { ?e vss:vehicle ?v } GROUP BY ?v""",
    "same, EMIT EARLY_AND_FINAL": """SELECT ?v (COUNT(*) AS ?n)
FROM STREAM VehicleSignals [PAST 10s FUTURE 5s STEP 1s EMIT EARLY_AND_FINAL] WHERE { ?e vss:vehicle ?v } GROUP BY ?v""",
    "[RANGE 15s] COUNT per vehicle (backward, for scale)": """SELECT ?v (COUNT(*) AS ?n)
FROM STREAM VehicleSignals [RANGE 15s] WHERE { ?e vss:vehicle ?v } GROUP BY ?v""",
}


def events(count: int, seed: int = 17) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [
        (
            f"<urn:e:{i}> <{VSS}hasAlert> <{VSS}{rng.choice(ALERTS)}> .\n<urn:e:{i}> <{VSS}vehicle> <urn:vehicle:{rng.randrange(20)}> .",
            i * 50,
        )
        for i in range(count)
    ]


def per_push_us(text: str, pushes: list[tuple[str, int]], mode: str) -> tuple[float, int]:
    engine = Engine()
    try:
        query = engine.register(PREFIX + text, mode=mode, r2s="ISTREAM")
        rows = [0]
        query.subscribe(lambda emission: rows.__setitem__(0, rows[0] + len(emission.rows)))
        started = time.perf_counter()
        for data, at in pushes:
            engine.push(STREAM, data, time=at)
        return (time.perf_counter() - started) / len(pushes) * 1e6, rows[0]
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--oracle-events", type=int, default=2_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cqels_ql2.md")
    args = parser.parse_args()
    stream = events(args.events)
    lines = [
        "# CQELS-QL 2.0 constructs per event (benchmarks/cqels_ql2.py)",
        "",
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the start.",
        f"{args.events} events, one per 50 ms; recompute on the first {args.oracle_events}.",
        "",
        f"| query | incremental µs/push ({args.events} events) | incremental µs/push (first {args.oracle_events}) "
        "| recompute µs/push (same) | ratio | rows emitted (same prefix, both modes) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, text in QUERIES.items():
        long_run, _ = per_push_us(text, stream, "incremental")
        short_run, rows = per_push_us(text, stream[: args.oracle_events], "incremental")
        oracle, oracle_rows = per_push_us(text, stream[: args.oracle_events], "recompute")
        assert rows == oracle_rows, f"{name}: incremental emitted {rows} rows, recompute {oracle_rows}"
        lines.append(f"| {name} | {long_run:.1f} | {short_run:.1f} | {oracle:.1f} | {oracle / short_run:.1f}× | {rows} |")
        print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
