"""`cqels load` against `oxigraph load`, same run, alternating.

    python benchmarks/bulk_load.py [--triples 1000000] [--preload 0] [--runs 3] [--oxigraph PATH] [--out benchmarks/results/bulk_load.md]

The N-Quads dataset of ``endpoint.py`` (generated into its cache once) is loaded into an empty
directory by each CLI in turn, ``--runs`` times, wall time of the whole command (``endpoint.load``);
after each load the directory is deleted. With ``--preload N`` the directory first gets, untimed, the
dataset of N quads by the same CLI: the timed load then goes into a store holding data (for
``cqels load``, the path that parses the file once before the bulk load). Reported: each time, the medians and their ratio.
Run it against the baseline by putting its checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import _endpoint_data as data
import endpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--preload", type=int, default=0, help="quads loaded first, untimed (0: an empty store)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--oxigraph", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    oxigraph = endpoint.oxigraph_binary(args.oxigraph)
    file = data.dataset(args.triples, endpoint.DATA_CACHE)
    preload = data.dataset(args.preload, endpoint.DATA_CACHE) if args.preload else None
    seconds: dict[str, list[float]] = {name: [] for name in endpoint.SERVERS}
    with tempfile.TemporaryDirectory(prefix="bulk-load-") as work_dir:
        work = Path(work_dir)
        tools = endpoint.Tools(Path(sys.executable).parent / "cqels", oxigraph, work, False)
        for run in range(args.runs):
            for name in endpoint.SERVERS:
                store = work / f"{name}-{run}"
                if preload is not None:
                    endpoint.load(tools, name, preload, store)
                seconds[name].append(endpoint.load(tools, name, file, store))
                shutil.rmtree(store)
    into = f" into a store holding the {args.preload:,}-quad dataset" if args.preload else ""
    title = f"# `cqels load` vs `oxigraph load` {endpoint.tool_version(oxigraph)}: {args.triples:,} quads of N-Quads{into}"
    endpoint.write_against_oxigraph(title, "| tool | loads (s) | median (s) |", "{} load", seconds, args.out)


if __name__ == "__main__":
    main()
