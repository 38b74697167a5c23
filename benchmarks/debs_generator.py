"""DEBS 2015 taxi trips of any number, drawn from the real sample, as NDJSON stream events.

    python benchmarks/debs_generator.py --trips 100000 --files 50 --out /tmp/debs-100k [--rate 2.38] [--seed 2015]

Each generated trip is one of the 5,000 of ``examples/data/debs2015`` (the first trips of
2013-01-01) drawn uniformly with replacement, with

- its pick-up and drop-off coordinates moved by Gaussian noise of a quarter of a DEBS grid cell
  (σ = 0.004491556 / 4 degrees of longitude, 0.005986 / 4 of latitude, about 110 m by 165 m) and
  written with the sample's six decimals, so the routes (pairs of cells) keep the sample's
  distribution, smoothed over neighbouring cells rather than repeating the same 5,000 points;
  a zero coordinate (the sample's missing positions, about 1.6 % of trips) stays zero, so the
  queries' HAVING drops as many trips as on the sample;
- its medallion, licence, trip duration, distance, payment type and fare columns unchanged (fare,
  surcharge, MTA tax, tip, tolls and total stay consistent with each other);
- a new drop-off time: drop-offs are a Poisson process of ``--rate`` trips per second of event time
  (default: the sample's 5,000 trips in 35 minutes) from 2013-01-01 00:00:00, written to the second,
  so trips come in drop-off order; the pick-up time is the drop-off time minus the trip's duration.

The CSV row built this way goes through the row → RDF mapping of ``cqels replay --mapping debs2015``
(``cqels_endpoint.cli.replay``), so the events are exactly what replaying such a CSV file would
push: subject ``:trip<n>`` for the n-th generated trip, all 17 columns as triples, event time the
drop-off time. ``--files K`` splits them into K NDJSON files of consecutive trips (file order = time
order, and each file's modification time one second after the previous one's, the order a Spark file
source reads them in), one event per line: ``{"stream": IRI, "time": ms, "data": "N-Triples"}``
(``cqels push``'s NDJSON with the stream named). The same ``--seed`` gives the same files.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cqels_endpoint.cli.replay import DEBS_PREDICATES, DEBS_TRIPS, ReplayEvent, _debs_event

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "data" / "debs2015" / "trips-2013-01-01-head5000.csv"
START = datetime(2013, 1, 1, tzinfo=UTC)
# The sample's 5,000 drop-offs span 00:02 to 00:37: its rate in trips per second of event time.
SAMPLE_RATE = 5000 / (35 * 60)
# The DEBS 2015 grid's cell side in degrees (examples/queries/debs-q1-frequent-routes.rq).
CELL_LON = 0.004491556
CELL_LAT = 0.005986
JITTER = 0.25  # σ of the coordinate noise, in cells
_TIME = "%Y-%m-%d %H:%M:%S"
# CSV columns of the coordinates, as (longitude, latitude) pairs: pick-up, drop-off.
_POINTS = ((6, 7), (8, 9))


def read_sample(path: Path = SAMPLE) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as lines:
        return list(csv.reader(lines))


def trip_rows(count: int, sample: Sequence[list[str]], seed: int = 2015, rate: float = SAMPLE_RATE) -> Iterator[list[str]]:
    """``count`` CSV rows of generated trips, in drop-off order (see the module's docstring)."""
    if rate <= 0:
        msg = f"the rate must be > 0 trips per second, not {rate}"
        raise ValueError(msg)
    rng = random.Random(seed)
    clock = 0.0  # seconds of event time since START
    for _ in range(count):
        row = list(rng.choice(sample))
        clock += rng.expovariate(rate)
        dropoff = START + timedelta(seconds=int(clock))
        row[2] = (dropoff - timedelta(seconds=int(row[4]))).strftime(_TIME)
        row[3] = dropoff.strftime(_TIME)
        for lon, lat in _POINTS:
            if float(row[lon]) != 0 and float(row[lat]) != 0:
                row[lon] = f"{float(row[lon]) + rng.gauss(0, JITTER * CELL_LON):.6f}"
                row[lat] = f"{float(row[lat]) + rng.gauss(0, JITTER * CELL_LAT):.6f}"
        yield row


def trip_events(count: int, seed: int = 2015, rate: float = SAMPLE_RATE, sample: Sequence[list[str]] | None = None) -> Iterator[ReplayEvent]:
    """The generated trips as ``cqels replay``'s events on ``DEBS_TRIPS``, the n-th trip ``:trip<n>``."""
    rows = trip_rows(count, read_sample() if sample is None else sample, seed, rate)
    for number, row in enumerate(rows, 1):
        yield _debs_event(number, row, DEBS_PREDICATES)


def ndjson_line(event: ReplayEvent) -> str:
    return json.dumps({"stream": DEBS_TRIPS, "time": event.time, "data": event.data}, ensure_ascii=False) + "\n"


def write_files(events: Sequence[ReplayEvent], files: int, out: Path) -> list[Path]:
    """``events`` split into ``files`` NDJSON files of consecutive events in ``out`` (created; it
    must hold no ``trips-*.ndjson`` yet), named and timestamped in event order."""
    if files < 1:
        msg = f"--files must be at least 1, not {files}"
        raise ValueError(msg)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("trips-*.ndjson")):
        msg = f"{out} already holds trips-*.ndjson files; give an empty or new directory"
        raise ValueError(msg)
    written = []
    # Modification times one second apart and in the past: a file source lists new files by them.
    first_mtime = time.time() - files - 1
    for index in range(files):
        path = out / f"trips-{index:05d}.ndjson"
        chunk = events[len(events) * index // files : len(events) * (index + 1) // files]
        with path.open("w", encoding="utf-8") as file:
            file.writelines(ndjson_line(event) for event in chunk)
        os.utime(path, (first_mtime + index, first_mtime + index))
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=100_000, help="how many trips (default 100000)")
    parser.add_argument("--files", type=int, default=50, help="how many NDJSON files to split them into (default 50)")
    parser.add_argument("--out", type=Path, required=True, help="the directory to write trips-00000.ndjson, … into")
    parser.add_argument("--rate", type=float, default=SAMPLE_RATE,
                        help=f"drop-offs per second of event time (default {SAMPLE_RATE:.2f}, the sample's)")
    parser.add_argument("--seed", type=int, default=2015)
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the DEBS 2015 CSV file to draw trips from")
    args = parser.parse_args()
    events = list(trip_events(args.trips, args.seed, args.rate, read_sample(args.sample)))
    try:
        paths = write_files(events, args.files, args.out)
    except ValueError as error:
        parser.error(str(error))
    span = (events[-1].time - events[0].time) / 60_000 if events else 0
    print(f"wrote {len(events)} trips ({span:.0f} minutes of event time) in {len(paths)} files to {args.out}")


if __name__ == "__main__":
    main()
