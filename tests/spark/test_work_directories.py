"""The directories of Spark cache builds under a data directory: named after their process, so
that those of a process killed in the middle of a build are removed by the next build, and those
of a live process are kept."""

from __future__ import annotations

import os
import subprocess
import sys

from cqels_endpoint.spark.export import work_directory


def test_the_leftovers_of_a_dead_process_are_removed_and_a_live_ones_kept(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead = tmp_path / "spark-caches" / f"cache-{ended.stdout.strip()}-abc123"
    live = tmp_path / "spark-caches" / f"cache-{os.getppid()}-def456"
    other = tmp_path / "spark-caches" / "notes"
    for path in (dead, live, other):
        path.mkdir(parents=True)
        (path / "part-0.parquet").write_bytes(b"x")
    made = work_directory(tmp_path, "spark-caches", "cache")
    assert made.parent == tmp_path / "spark-caches" and made.name.startswith(f"cache-{os.getpid()}-")
    assert not dead.exists() and live.exists() and other.exists()
    assert work_directory(None, "spark-caches", "cache").parent != tmp_path / "spark-caches"
