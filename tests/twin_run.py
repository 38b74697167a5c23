"""The engine's property tests once more, on the pure-Python twins: ``pytest`` on their modules in a
``CQELS_PURE_PYTHON=1`` subprocess, whose exit code tests/operators/test_pure_python.py asserts.

The run needs nothing of the session but its checkout, and takes minutes: as soon as the session
has collected that test, tests/conftest.py starts it, so that it runs beside the other tests (on
the second core) instead of after them; the test then waits for it. Whatever ends the session
first kills it (``stop``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import IO

from paths import ROOT

from cqels_endpoint.runtime.compiled import use_pure_python

ENGINE_PROPERTY_TESTS = (
    "test_incremental_differential.py",
    "test_incremental_distinct_union_optional.py",
    "test_incremental_negation.py",
    "test_incremental_aggregates.py",
    "test_incremental_topk.py",
    # The stream-static joins and BIND/FILTER operators around the geof: functions (15 s).
    "test_geosparql_modes.py",
    "test_stream_wide_triples.py",
    "test_cep.py",  # FILTER(SEQ(…)) on the CEP matcher's twin
    "test_predicate_filter.py",  # the stream predicate filter, with encode_triples on the dictionary twin
)
# The test that asserts the run's exit code, as a node id.
TEST = "tests/operators/test_pure_python.py::test_the_engine_property_tests_pass_on_the_twins"


def environment(flag: str) -> dict[str, str]:
    """This environment with the switch ``CQELS_PURE_PYTHON`` set to ``flag``."""
    return {**os.environ, "CQELS_PURE_PYTHON": flag}


def modules() -> list[str]:
    """The paths of the property test modules (their DEBS runs are left out of the run: the same
    operators on more data, a minute on the twins)."""
    return [str(path) for name in ENGINE_PROPERTY_TESTS for path in (ROOT / "tests").rglob(name)]


class _Run:
    process: subprocess.Popen | None = None
    output: IO[str] | None = None


_run = _Run()


def start() -> None:
    """Starts the run, unless it was started already."""
    if _run.process is not None:
        return
    # A file, not a pipe: nobody reads the output before the run ends, and a full pipe would block it.
    _run.output = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by stop)
    _run.process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not debs", *modules()],
        cwd=ROOT, env=environment("1"), stdout=_run.output, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def start_if_selected(node_ids: list[str]) -> None:
    """Starts the run if the session is to run ``TEST`` (which skips when the session runs on the twins)."""
    if TEST in node_ids and not use_pure_python():
        start()


def result() -> tuple[int, str]:
    """The run's exit code and output (stdout and stderr), once it has ended; started now if it was not."""
    start()
    code = _run.process.wait()
    _run.output.seek(0)
    return code, _run.output.read()


def stop() -> None:
    """Kills the run if it is still going (the session ended first), and drops its output."""
    if _run.process is None:
        return
    if _run.process.poll() is None:
        _run.process.kill()
        _run.process.wait()
    _run.output.close()
    _run.process = _run.output = None
