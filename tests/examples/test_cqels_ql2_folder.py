"""examples/cqels-ql-2/: every query of the folder, with the folder's data, through ``Engine``.

Each ``.rq`` file reads the streams its ``FROM STREAM Name`` / ``ON Name`` clauses name; their events
are ``streams/Name.ndjson`` (the NDJSON lines ``cqels push`` and ``POST /streams`` take), pushed
in time order across streams (each file's own order kept: Doors and Badges carry an event out of
order for the LATENESS examples). ``static.ttl`` is the graph ``<http://example.org/graph>``.
Every query runs in the CQELS-QL 2.0 dialect (``query.dialects``), in both modes with every R2S
(``incremental_oracle.run_both``): the modes must agree at every evaluation, and the ISTREAM must
have emitted something (the data is chosen so that every example shows what it is about).
Each file's emissions under its own R2S (the REGISTER keyword's, else RSTREAM for a directional
query, else ISTREAM) must be, in both modes, exactly what the README's section "What each example
prints" shows for it (``printed``), and every file must have its entry there. Then the folder
README's session is run for real against ``cqels serve``: its commands, and the table ``cqels
watch`` prints.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import shlex
import subprocess
import time
import urllib.request
from pathlib import Path

import pyoxigraph as ox
import pytest
from incremental_oracle import Scenario, differences, run_both
from paths import ROOT
from readme_sessions import commands, section_blocks
from serve_process import environment, serving

from cqels_endpoint import Engine
from cqels_endpoint.config import DEFAULT_STREAM_BASE

FOLDER = ROOT / "examples" / "cqels-ql-2"
GRAPH = "http://example.org/graph"
# A stream a query reads: a bare name after FROM STREAM or a named window's ON, or a full IRI
# under the default stream base.
STREAM = re.compile(rf"(?:FROM\s+STREAM|\bON)\s+(?:<{re.escape(DEFAULT_STREAM_BASE)})?(\w+)")
QUERIES = sorted(FOLDER.glob("*.rq"))
END_MS = 3_600_000
README = FOLDER / "README.md"
PRINTS = "What each example prints"
EX = "http://example.org/"
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
# One line of a README block: an emission's time (an anchor's, with its phase for a directional
# query), or a run of times FIRST..LAST step STEP with the same rows; then its rows.
LINE = re.compile(r"(?P<first>\d+)(?:\.\.(?P<last>\d+) step (?P<step>\d+))?(?: (?P<phase>early|final))?")
EMPTY = ("(no rows)", "(no triples)")


def streams_read(text: str) -> list[str]:
    """The bare names of the streams the query text reads (comments left out)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return sorted(set(STREAM.findall(code)))


def stream_events(name: str) -> list[tuple[int, str, str]]:
    """``(time, stream IRI, N-Triples)`` of ``streams/NAME.ndjson``, in line order."""
    lines = (FOLDER / "streams" / f"{name}.ndjson").read_text(encoding="utf-8").splitlines()
    return [(event["time"], DEFAULT_STREAM_BASE + name, event["data"]) for event in map(json.loads, lines)]


def static_nquads() -> str:
    store = ox.Store()
    store.load(path=str(FOLDER / "static.ttl"), format=ox.RdfFormat.TURTLE, to_graph=ox.NamedNode(GRAPH))
    return store.dump(format=ox.RdfFormat.N_QUADS).decode()


def scenario(path: Path) -> Scenario:
    text = path.read_text(encoding="utf-8")
    merged = heapq.merge(*(stream_events(name) for name in streams_read(text)), key=lambda event: event[0])
    events = [["push", stream, time, data] for time, stream, data in merged]
    # The end of the streams: an hour on, every window the last events are in has closed (a
    # tumbling [RANGE d] reports at its close, §3.1).
    events.append(["advance", max(event[2] for event in events) + END_MS])
    return Scenario(text, static_nquads(), events, dialect="cqels2")


def shown(term: ox.NamedNode | ox.BlankNode | ox.Literal | None) -> str:
    """A term as the README shows it: an IRI under ``ex:`` by its local name, a string quoted, any
    other literal by its lexical form, an unbound variable as ``-``."""
    if term is None:
        return "-"
    if isinstance(term, ox.NamedNode):
        return term.value.removeprefix(EX) if term.value.startswith(EX) else f"<{term.value}>"
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    if term.language:
        return f'"{term.value}"@{term.language}'
    return f'"{term.value}"' if term.datatype.value == XSD_STRING else term.value


def emission_lines(emissions: list, ordered: bool) -> list[str]:
    """One line per emission, ``TIME[ PHASE]: ROW | ROW …``: a row is its values in SELECT order (a
    CONSTRUCT's triple: subject, predicate, object), the rows sorted unless the query orders them."""
    lines = []
    for emission in emissions:
        phase = "" if emission.final is None else " final" if emission.final else " early"
        if emission.rows is not None:
            rows = [" ".join(shown(row.get(var)) for var in emission.variables) for row in emission.rows]
        else:
            rows = [f"{shown(t.subject)} {shown(t.predicate)} {shown(t.object)}" for t in emission.triples]
        empty = EMPTY[emission.rows is None]
        lines.append(f"{emission.time}{phase}: " + (" | ".join(rows if ordered else sorted(rows)) or empty))
    return lines


def header(emission) -> str:
    """The first line of a README block: what a row holds."""
    return "time: " + (" ".join(f"?{var}" for var in emission.variables) if emission.rows is not None else "subject predicate object")


def printed() -> dict[str, list[str]]:
    """The README's blocks of "What each example prints", by file: each block's lines."""
    section = README.read_text(encoding="utf-8").split(f"\n## {PRINTS}\n", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for entry in section.split("\n### ")[1:]:
        name = re.match(r"`([\w-]+\.rq)`", entry)
        block = re.search(r"```text\n(.*?)```", entry, re.S)
        assert name and block, f"an entry of {PRINTS} without a `FILE.rq` heading or a text block: {entry[:80]!r}"
        assert name[1] not in blocks, f"{name[1]} twice in {PRINTS}"
        blocks[name[1]] = block[1].splitlines()
    return blocks


def expanded(lines: list[str], ordered: bool) -> list[str]:
    """A README block's emission lines as ``emission_lines`` writes them: each run of times one line
    per time, the rows sorted unless the query orders them, spaces normalised."""
    found = []
    for line in lines:
        when, _, rows = line.partition(":")
        match = LINE.fullmatch(when.strip())
        assert match, f"not an emission line: {line!r}"
        first, last, step, phase = match["first"], match["last"], match["step"], match["phase"]
        times = range(int(first), int(last) + 1, int(step)) if last else [int(first)]
        assert times, f"an empty run of times: {line!r}"
        rows = rows.strip()
        if rows not in EMPTY:
            rows = [" ".join(row.split()) for row in rows.split("|")]
            rows = " | ".join(rows if ordered else sorted(rows))
        found += [f"{time}{' ' + phase if phase else ''}: {rows}" for time in times]
    return found


def emitted(logs: dict, mode: str) -> int:
    """The rows (or CONSTRUCT triples) a mode's ISTREAM emitted."""
    return sum(len(e.rows if e.rows is not None else e.triples) for e in logs[mode, "ISTREAM"])


def test_every_stream_a_query_reads_has_events_and_every_stream_file_is_read() -> None:
    files = {path.stem for path in (FOLDER / "streams").glob("*.ndjson")}
    read = {name for path in QUERIES for name in streams_read(path.read_text(encoding="utf-8"))}
    assert read == files


def test_every_example_has_an_entry_in_what_each_example_prints_and_every_entry_a_file() -> None:
    assert sorted(printed()) == [path.name for path in QUERIES]


@pytest.mark.parametrize("path", QUERIES, ids=[path.stem for path in QUERIES])
def test_example_runs_in_both_modes_and_prints_what_the_readme_says(path: Path) -> None:
    case = scenario(path)
    engine = Engine()
    try:
        # The streams the test pushes are the ones the engine says the query reads.
        query = engine.register(case.query, name="probe", dialect=case.dialect)
        assert query.streams == {DEFAULT_STREAM_BASE + name for name in streams_read(case.query)}
        r2s = str(query.r2s)  # the query's own: its REGISTER keyword's, else the dialect's default
    finally:
        engine.close()
    logs = run_both(case)
    assert differences(logs) == []
    assert emitted(logs, "incremental") > 0
    assert emitted(logs, "recompute") > 0
    block = printed().get(path.name)
    assert block, f"{path.name} has no entry in the README's {PRINTS!r}"
    ordered = logs["ordered", "rows"][0]
    assert block[0] == header(logs["incremental", r2s][0])
    for mode in ("incremental", "recompute"):
        assert emission_lines(logs[mode, r2s], ordered) == expanded(block[1:], ordered), mode


def _timings(lines: list[str]) -> list[str]:
    return [re.sub(r"in \d+\.\d s", "in … s", line) for line in lines]


def _wait_for_subscriber(base_url: str, name: str) -> None:
    """Until the server counts a results stream of ``name`` (an emission before it would be missed)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with opener.open(base_url + "/metrics", timeout=10) as response:
            if f'cqels_query_subscribers{{query="{name}"}} 1' in response.read().decode():
                return
        time.sleep(0.05)
    pytest.fail(f"cqels watch {name} did not subscribe")


@pytest.mark.slow  # about 20 s: a server and seven cqels commands, each a Python process
def test_the_readme_session_gives_the_output_it_shows(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "cqels-ql2")
    load, serve, *session = [command for block in section_blocks(FOLDER / "README.md", "Run one") for command in commands(block)]
    assert serve[0] == ".venv/bin/cqels serve --data-dir /tmp/cqels-ql2 --cache-engine local --dialect cqels2"
    # The subprocesses run the mode (compiled or pure Python) this test runs.
    pure = {"CQELS_PURE_PYTHON": os.environ["CQELS_PURE_PYTHON"]} if "CQELS_PURE_PYTHON" in os.environ else {}

    def run(command: str, env: dict[str, str]) -> list[str]:
        done = subprocess.run(shlex.split(command.replace("/tmp/cqels-ql2", data_dir)), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert _timings(run(load[0], environment(**pure))) == _timings([line.replace("/tmp/cqels-ql2", data_dir) for line in load[1]])
    with serving("--data-dir", data_dir, "--cache-engine", "local", "--dialect", "cqels2", env=pure, cwd=ROOT) as server:
        started = next(line for line in server.output if "listening on" in line)
        started = started.replace(data_dir, "/tmp/cqels-ql2").replace(server.base_url, "http://127.0.0.1:7878")
        assert started.startswith(serve[1][0].removesuffix(" …"))
        env = environment(CQELS_URL=server.base_url, **pure)
        watchers = []
        try:
            for command, expected in session:
                if " watch " not in command:
                    assert run(command, env) == expected, command
                    continue
                watcher = subprocess.Popen(shlex.split(command), cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
                watchers.append((watcher, expected))
                _wait_for_subscriber(server.base_url, shlex.split(command)[2])
            for watcher, expected in watchers:
                output, _ = watcher.communicate(timeout=60)
                assert output.splitlines() == expected
        finally:
            for watcher, _ in watchers:
                if watcher.poll() is None:
                    watcher.kill()
                    watcher.communicate()
