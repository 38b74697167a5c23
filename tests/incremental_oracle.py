"""Runs one continuous query in both modes on one engine and compares every emission.

The incremental engine must agree with re-evaluation (DESIGN §4 "Oracle") at *every* evaluation
time and for every R2S: ``run_both`` registers the query six times on one ``Engine`` (incremental
and recompute, each with ISTREAM, RSTREAM and DSTREAM), replays the events, and ``differences``
lists every evaluation time where the two modes' emissions differ. Emissions are compared as bags
(rows) or sets (CONSTRUCT triples): Γ has no order.

A scenario is plain JSON-able data (``Scenario.to_json``/``from_json``) so that failing examples of
the property tests are kept as regression files under ``tests/regressions/incremental/``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint import Engine
from static_store import StaticStore

R2S = ("ISTREAM", "RSTREAM", "DSTREAM")
MODES = ("incremental", "recompute")
REGRESSIONS = Path(__file__).parent / "regressions" / "incremental"


@dataclass
class Scenario:
    """A query, the static data (N-Quads) and the events: ``["push", stream, time, n-triples]`` or
    ``["advance", time]``."""

    query: str
    static: str = ""
    events: list[list] = field(default_factory=list)
    note: str = ""

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


def emission_key(emission) -> tuple:
    """An emission as comparable data: its time and its rows (a bag) or triples (a set)."""
    if emission.rows is not None:
        rows = Counter(frozenset(row.items()) for row in emission.rows)
        return emission.time, frozenset(rows.items())
    return emission.time, frozenset(emission.triples)


def static_store(nquads: str) -> StaticStore:
    store = StaticStore()
    if nquads.strip():
        store.load(nquads.encode(), media_type="application/n-quads")
    return store


def run_both(scenario: Scenario) -> dict[tuple[str, str], list]:
    """The emissions of every (mode, r2s) registration, replaying the scenario on one engine."""
    engine = Engine(store=static_store(scenario.static))
    logs: dict[tuple[str, str], list] = {}
    for mode in MODES:
        for r2s in R2S:
            query = engine.register(scenario.query, name=f"{mode}-{r2s}", r2s=r2s, mode=mode)
            logs[mode, r2s] = []
            query.subscribe(logs[mode, r2s].append)
    for event in scenario.events:
        if event[0] == "push":
            _, stream, time, ntriples = event
            engine.push(stream, ntriples, time=time)
        else:
            engine.advance(event[1])
    snapshots = {mode: Counter(frozenset(r.items()) for r in engine.queries[f"{mode}-RSTREAM"].snapshot()) for mode in MODES}
    logs["snapshot", "incremental"] = [snapshots["incremental"]]
    logs["snapshot", "recompute"] = [snapshots["recompute"]]
    engine.close()
    return logs


def differences(logs: dict[tuple[str, str], list]) -> list[str]:
    """Where incremental and recompute disagree: one line per R2S and evaluation time."""
    found = []
    for r2s in R2S:
        incremental = [emission_key(e) for e in logs["incremental", r2s]]
        recompute = [emission_key(e) for e in logs["recompute", r2s]]
        if incremental == recompute:
            continue
        for position in range(max(len(incremental), len(recompute))):
            mine = incremental[position] if position < len(incremental) else None
            oracle = recompute[position] if position < len(recompute) else None
            if mine != oracle:
                found.append(f"{r2s} emission {position}: incremental {_show(mine)} != recompute {_show(oracle)}")
                break
    if logs["snapshot", "incremental"] != logs["snapshot", "recompute"]:
        found.append(f"final snapshot: incremental {logs['snapshot', 'incremental']} != recompute {logs['snapshot', 'recompute']}")
    return found


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
    return f"τ={time} [" + "; ".join(sorted(items)) + "]"
