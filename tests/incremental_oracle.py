"""Runs one continuous query in both modes on one engine and compares every emission.

The incremental engine must agree with re-evaluation (docs/ARCHITECTURE.md, "The oracle") at *every* evaluation
time and for every R2S: ``run_both`` registers the query six times on one ``Engine`` (incremental
and recompute, each with ISTREAM, RSTREAM and DSTREAM), replays the events, and ``differences``
lists every evaluation time where the two modes' emissions differ. Emissions are compared as bags
(rows) or sets (CONSTRUCT triples): Γ has no order — except the rows of a query with a top-level
ORDER BY or LIMIT/OFFSET, which both modes emit in ORDER BY order (ties broken by
``algebra.ties``): those are compared as lists, and so are the final snapshots. The one tolerance:
an xsd:double/xsd:float value of a SUM or AVG may differ by the re-evaluation's own rounding
(``within_rounding``).

A scenario is plain JSON-able data (``Scenario.to_json``/``from_json``) so that failing examples of
the property tests are kept as regression files under ``tests/regressions/<area>/``: each property
test runs ``check_keeping_failures`` and replays its folder with
``@pytest.mark.parametrize(("name", "scenario"), regression_cases(folder))``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis.control import current_build_context
from known_failures import ORACLE_DEVIATIONS

from cqels_endpoint import Engine
from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.errors import CqelsError, StoreError
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.query.visit import walk
from cqels_endpoint.terms import XSD, Var
from static_store import StaticStore

R2S = ("ISTREAM", "RSTREAM", "DSTREAM")
MODES = ("incremental", "recompute")
REGRESSIONS = Path(__file__).parent / "regressions" / "incremental"
# The parent of the property tests' settings (``@settings(ORACLE_SETTINGS, max_examples=...)``): one
# example replays a whole engine six times, so its duration varies too much for a deadline.
ORACLE_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Scenario:
    """A query, the static data (N-Quads) and the events: ``["push", stream, time, n-triples]`` or
    ``["advance", time]``; ``dialect`` the query reads in (``query.dialects``)."""

    query: str
    static: str = ""
    events: list[list] = field(default_factory=list)
    note: str = ""
    dialect: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        return cls(**json.loads(text))

    def save(self, directory: Path = REGRESSIONS) -> Path:
        """Writes the scenario as a regression file named by its content; returns the path."""
        text = self.to_json()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
        path.write_text(text + "\n", encoding="utf-8")
        return path


def saved_scenarios(directory: Path = REGRESSIONS) -> list[tuple[str, Scenario]]:
    """The regression files, by name."""
    return [(path.stem, Scenario.from_json(path.read_text(encoding="utf-8"))) for path in sorted(directory.glob("*.json"))]


def regression_cases(directory: Path = REGRESSIONS) -> list:
    """The parameters of a ``test_regression(name, scenario)``: the saved scenarios (those where
    the oracle itself is wrong, ``known_failures.ORACLE_DEVIATIONS``, as strict xfails), or one
    skipped case while the folder is empty (pytest refuses an empty parameter list)."""
    cases = [
        pytest.param(name, scenario, marks=pytest.mark.xfail(reason=ORACLE_DEVIATIONS[name], strict=True))
        if name in ORACLE_DEVIATIONS
        else (name, scenario)
        for name, scenario in saved_scenarios(directory)
    ]
    return cases or [pytest.param("none", None, marks=pytest.mark.skip(reason="no regression files yet"))]


def emission_key(emission, ordered: bool = False) -> tuple:
    """An emission as comparable data: its time and its rows (a bag, or a list if ``ordered``) or
    triples (a set)."""
    if emission.rows is not None:
        if ordered:
            return emission.time, tuple((frozenset(row.items()), 1) for row in emission.rows)
        rows = Counter(frozenset(row.items()) for row in emission.rows)
        return emission.time, frozenset(rows.items())
    return emission.time, frozenset(emission.triples)


def is_ordered(query: n.AlgebraQuery) -> bool:
    """Whether the rows of ``query`` come in an order: a top-level ORDER BY, or a LIMIT/OFFSET (whose
    slice is taken in the tie-break order)."""
    pattern = query.pattern
    while isinstance(pattern, (n.Slice, n.Distinct, n.Reduced, n.Project)):
        if isinstance(pattern, n.Slice):
            return True
        pattern = pattern.input
    return isinstance(pattern, n.OrderBy)


def static_store(nquads: str) -> StaticStore:
    store = open_store()
    if nquads.strip():
        store.load(nquads.encode(), media_type="application/n-quads")
    return store


def run_both(scenario: Scenario) -> dict[tuple[str, str], list]:
    """The emissions of every (mode, r2s) registration, replaying the scenario on one engine."""
    engine = Engine(store=static_store(scenario.static))
    # Parsed once: what ``Engine.register`` does before ``register_algebra``, and over half of what a
    # registration costs; the six registrations of one text would parse the same tree six times.
    algebra = engine.translate(scenario.query, scenario.dialect)
    logs: dict[tuple[str, str], list] = {}
    for mode in MODES:
        for r2s in R2S:
            query = engine.register_algebra(algebra, scenario.query, name=f"{mode}-{r2s}", r2s=r2s, mode=mode)
            logs[mode, r2s] = []
            query.subscribe(logs[mode, r2s].append)
    for event in scenario.events:
        if event[0] == "push":
            _, stream, time, ntriples = event
            engine.push(stream, ntriples, time=time)
        else:
            engine.advance(event[1])
    algebra = engine.queries["incremental-RSTREAM"].algebra
    ordered = is_ordered(algebra)
    logs["ordered", "rows"] = [ordered]
    pushed = [event[3] for event in scenario.events if event[0] == "push"]
    summands = sum(text.count("\n") + 1 for text in pushed)
    floats = any(f"<{XSD}float>" in text for text in pushed)
    logs["rounding", "sums"] = [summed_variables(algebra), summands, floats]
    for mode in MODES:
        rows = [frozenset(r.items()) for r in engine.queries[f"{mode}-RSTREAM"].snapshot()]
        logs["snapshot", mode] = [rows if ordered else Counter(rows)]
    engine.close()
    return logs


def check(scenario: Scenario) -> dict[tuple[str, str], list]:
    """Asserts that both modes emit the same at every evaluation; returns the emissions."""
    logs = run_both(scenario)
    found = differences(logs)
    assert not found, "incremental != recompute:\n" + "\n".join(found) + "\nscenario:\n" + scenario.to_json()
    return logs


def check_keeping_failures(
    scenario: Scenario, directory: Path = REGRESSIONS, check: Callable[[Scenario], dict] = check
) -> dict[tuple[str, str], list]:
    """``check(scenario)`` inside a hypothesis test: notes the scenario, and saves the final (shrunk)
    failing example — a disagreement or a crash — in ``directory``, so that it runs as an explicit
    case from then on. A ``CqelsError`` or ``StoreError`` (the engine or the store refusing the query
    or an event) is a generator bug and is not kept."""
    note(scenario.to_json())
    try:
        return check(scenario)
    except (CqelsError, StoreError):
        raise
    except Exception:
        if current_build_context().is_final:
            note(f"saved as {scenario.save(directory)}")
        raise


def emitted(logs: dict[tuple[str, str], list], r2s: str) -> int:
    """How many rows (or CONSTRUCT triples) recompute emitted with ``r2s``: for ``event()`` statistics."""
    return sum(len(e.rows if e.rows is not None else e.triples) for e in logs["recompute", r2s])


def differences(logs: dict[tuple[str, str], list]) -> list[str]:
    """Where incremental and recompute disagree: one line per R2S and evaluation time."""
    found = []
    ordered = logs["ordered", "rows"][0]
    for r2s in R2S:
        incremental = [emission_key(e, ordered) for e in logs["incremental", r2s]]
        recompute = [emission_key(e, ordered) for e in logs["recompute", r2s]]
        if incremental == recompute or within_rounding(incremental, recompute, *logs["rounding", "sums"]):
            continue
        for position in range(max(len(incremental), len(recompute))):
            mine = incremental[position] if position < len(incremental) else None
            oracle = recompute[position] if position < len(recompute) else None
            if mine != oracle:
                found.append(f"{r2s} emission {position}: incremental {_show(mine)} != recompute {_show(oracle)}")
                break
    snapshots = [
        [(None, tuple((row, 1) for row in rows) if ordered else frozenset(rows.items()))]
        for rows in (logs["snapshot", mode][0] for mode in MODES)
    ]
    if logs["snapshot", "incremental"] != logs["snapshot", "recompute"] and not within_rounding(
        *snapshots, *logs["rounding", "sums"]
    ):
        found.append(f"final snapshot: incremental {logs['snapshot', 'incremental']} != recompute {logs['snapshot', 'recompute']}")
    return found


def summed_variables(query: n.AlgebraQuery) -> frozenset[str]:
    """The variables a SELECT expression binds to a SUM or AVG as it is (``(SUM(?x) AS ?s)``)."""
    sums = {
        var.name for node in walk(query) if isinstance(node, n.Group)
        for var, aggregate in node.aggregates if aggregate.name in ("SUM", "AVG")
    }  # fmt: skip
    return frozenset(
        node.var.name for node in walk(query)
        if isinstance(node, n.Extend) and isinstance(node.expr, Var) and node.expr.name in sums
    )  # fmt: skip


_EPSILON = {XSD + "double": 2.0**-52, XSD + "float": 2.0**-23}


def within_rounding(mine: list, oracle: list, variables: frozenset[str], summands: int, floats: bool) -> bool:
    """Whether two lists of emission keys are equal but for the finite xsd:double/xsd:float values
    of ``variables`` (SUM/AVG results), each within (``summands`` + 2)·ε of the other relatively
    (ε: the machine epsilon of the widest-rounding type a partial sum can have; ``summands``: the
    stream triples pushed, which bounds the values of a group over one stream pattern). The
    incremental mode rounds the exact sum once (``runtime.aggregates``); pyoxigraph rounds each
    partial sum and each promoted addend in the partial sum's type, which for non-negative addends
    stays within summands·ε, and AVG's division adds one rounding on each side. A partial sum is
    an xsd:float until a double joins it, so when ``floats`` (an xsd:float among the pushed
    values) a double result may carry float roundings, depending on pyoxigraph's order of the
    addends."""
    if not variables or len(mine) != len(oracle):
        return False
    sums = (variables, summands, floats)
    for (time, rows), (oracle_time, oracle_rows) in zip(mine, oracle):
        if time != oracle_time or any(isinstance(item, ox.Triple) for item in (*rows, *oracle_rows)):
            return False
        mine_rows = [dict(row) for row, count in rows for _ in range(count)]
        pending = [dict(row) for row, count in oracle_rows for _ in range(count)]
        if isinstance(rows, tuple):  # ordered rows: row by row
            if len(mine_rows) != len(pending) or not all(_close(a, b, sums) for a, b in zip(mine_rows, pending)):
                return False
            continue
        for row in mine_rows:  # a bag: each row matches one row left of the oracle's
            match = next((i for i, other in enumerate(pending) if _close(row, other, sums)), None)
            if match is None:
                return False
            del pending[match]
        if pending:
            return False
    return True


def _close(row: dict, other: dict, sums: tuple[frozenset[str], int, bool]) -> bool:
    variables, summands, floats = sums
    if row.keys() != other.keys():
        return False
    for name, term in row.items():
        theirs = other[name]
        if term == theirs:
            continue
        epsilon = _EPSILON.get(term.datatype.value) if name in variables and isinstance(term, ox.Literal) else None
        if epsilon is None or not isinstance(theirs, ox.Literal) or theirs.datatype != term.datatype:
            return False
        if floats:
            epsilon = max(epsilon, _EPSILON[XSD + "float"])
        a, b = float(term.value), float(theirs.value)
        finite = math.isfinite(a) and math.isfinite(b)
        if not finite or abs(a - b) > (summands + 2) * epsilon * max(abs(a), abs(b)):
            return False
    return True


def _show(key: tuple | None) -> str:
    if key is None:
        return "(no emission)"
    time, content = key
    items = []
    for item in content:
        if isinstance(item, ox.Triple):
            items.append(str(item))
        else:
            row, count = item
            text = "{" + ", ".join(f"?{k}={v}" for k, v in sorted(row, key=lambda kv: kv[0])) + "}"
            items.append(text if count == 1 else f"{text}×{count}")
    if isinstance(content, tuple):  # an ordered emission: keep its order
        return f"τ={time} [" + "; ".join(items) + "]"
    return f"τ={time} [" + "; ".join(sorted(items)) + "]"
