"""``CQELS_PURE_PYTHON=1``: the package picks the pure-Python twins of every compiled module (the
operators, the term codec and dictionary, the router, the window states; the N-Triples reader has
none: pyoxigraph reads every event), and the engine's property tests pass on them.

The operator tests compare each compiled operator with its twin in one process, whatever the
switch; what only the switch exercises is the engine running on the twins. So the engine-level
differential tests of the operators that have twins run here once more, in a process with the
switch on (their DEBS runs excepted: the same operators on more data, a minute on the twins).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT

from cqels_endpoint.runtime.compiled import use_pure_python

# The engine's operators that have a compiled module and a twin, with the module each comes from.
OPERATORS = {
    "GroupAggregate": "aggregate",
    "Distinct": "distinct",
    "MultiwayJoin": "join",
    "WindowBuffer": "join",
    "Mark": "mark",
    "Negation": "negation",
    "OptionalJoin": "optional",
    "Project": "project",
    "TopK": "topk",
    "Union": "union",
}

ENGINE_PROPERTY_TESTS = (
    "test_incremental_differential.py",
    "test_incremental_distinct_union_optional.py",
    "test_incremental_negation.py",
    "test_incremental_aggregates.py",
    "test_incremental_topk.py",
)


def _environment(flag: str) -> dict[str, str]:
    return {**os.environ, "CQELS_PURE_PYTHON": flag}


@pytest.mark.parametrize(("flag", "compiled"), [("1", False), ("0", True)])
def test_the_switch_picks_the_twins_of_every_compiled_module(flag, compiled):
    code = (
        "import cqels_endpoint.operators as o, cqels_endpoint.runtime.encoding as e\n"
        "from cqels_endpoint.runtime import routing, streams, windows\n"
        "from cqels_endpoint.query.windows import RangeWindow\n"
        f"for name in {list(OPERATORS)!r}: print(getattr(o, name).__module__)\n"
        "print(o.COMPILED, e.COMPILED, e.inline_id is e.inline_id_python, e.decode_inline is e.decode_inline_python,\n"
        "      e.TermDictionary is e.TermDictionaryPython, routing.Router is routing.RouterPython,\n"
        "      type(windows.build_window(RangeWindow(1))) is windows.EagerRangeState, streams.read_ntriples is None)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], env=_environment(flag), capture_output=True, text=True, check=True
    ).stdout.split()
    package = "cqels_endpoint.operators._" if compiled else "cqels_endpoint.operators.reference."
    assert output[: len(OPERATORS)] == [package + module for module in OPERATORS.values()]
    assert output[len(OPERATORS) :] == [str(compiled), str(compiled)] + [str(not compiled)] * 6


def test_the_engine_property_tests_pass_on_the_twins():
    if use_pure_python():
        pytest.skip("this whole session runs on the twins already")
    modules = [str(path) for name in ENGINE_PROPERTY_TESTS for path in (ROOT / "tests").rglob(name)]
    assert len(modules) == len(ENGINE_PROPERTY_TESTS), modules
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not debs", *modules],
        cwd=ROOT,
        env=_environment("1"),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
