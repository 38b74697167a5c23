"""``CQELS_PURE_PYTHON=1``: the package picks the pure-Python twins of every compiled module (the
operators, the term codec and dictionary, the router, the window states; the N-Triples reader has
none: pyoxigraph reads every event), and the engine's property tests pass on them.

The operator tests compare each compiled operator with its twin in one process, whatever the
switch; what only the switch exercises is the engine running on the twins. So the engine-level
differential tests of the operators that have twins run here once more, in a process with the
switch on (their DEBS runs excepted: the same operators on more data, a minute on the twins),
started by the session as soon as it has collected this test (``twin_run``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import twin_run

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
        [sys.executable, "-c", code], env=twin_run.environment(flag), capture_output=True, text=True, check=True
    ).stdout.split()
    package = "cqels_endpoint.operators._" if compiled else "cqels_endpoint.operators.reference."
    assert output[: len(OPERATORS)] == [package + module for module in OPERATORS.values()]
    assert output[len(OPERATORS) :] == [str(compiled), str(compiled)] + [str(not compiled)] * 6


def test_the_engine_property_tests_pass_on_the_twins():
    if use_pure_python():
        pytest.skip("this whole session runs on the twins already")
    assert len(twin_run.modules()) == len(twin_run.ENGINE_PROPERTY_TESTS), twin_run.modules()
    code, output = twin_run.result()
    assert code == 0, output[-7000:]
