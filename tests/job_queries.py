"""Random continuous queries and event files for the differential tests of Spark jobs.

``job_cases()`` draws a query over 1–3 streams (each stream's subject the shared ``?s`` or a
variable of its own, so that some queries have a key and some run on one partition; ``[NOW]`` and
``[RANGE]`` windows, a stream sometimes named by a variable, read on one partition), combined by
join, OPTIONAL, UNION or MINUS, with FILTER, BIND and a static join or not, under a SELECT,
DISTINCT, GROUP BY (by the key, by a value, or none; every aggregate), ORDER BY … LIMIT, ASK or
CONSTRUCT; the R2S; and events on those streams split into files in time order. The tests run each
case as a job (``tests/streaming/test_job_random.py`` in this process, ``tests/spark/`` on Spark)
and as the single-process engine, and compare every emission.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

EX = "http://ex.org/"
INTEGER = '"%d"^^<http://www.w3.org/2001/XMLSchema#integer>'
# Each stream: its IRI, its predicate and the variable of its values.
STREAMS = ((f"{EX}a", "temp", "?t"), (f"{EX}b", "hum", "?h"), (f"{EX}c", "wind", "?w"))
# Labels of some subjects (s1 twice: a static join that multiplies rows), in the default graph.
STATIC = "".join(f'<{EX}s{s}> <{EX}label> "{label}" .\n' for s, label in ((0, "zero"), (1, "one"), (1, "uno"), (2, "two")))
AGGREGATES = (
    "(COUNT(*) AS ?n)",
    "(COUNT(DISTINCT {v}) AS ?nd)",
    "(SUM({v}) AS ?sum)",
    "(AVG({v}) AS ?avg)",
    "(MIN({v}) AS ?min)",
    "(MAX({v}) AS ?max)",
    "(SAMPLE({v}) AS ?sample)",
    "(GROUP_CONCAT(STR({v}); SEPARATOR=',') AS ?all)",
    "(COUNT(DISTINCT ?s) AS ?ns)",
)
# Those a job can aggregate in part in each partition and merge (plan.partitioning.split_aggregates).
MERGEABLE = tuple(a for a in AGGREGATES if a.startswith(("(COUNT(*)", "(MIN", "(MAX", "(SAMPLE", "(COUNT(DISTINCT ?s)")))


def examples(default: int) -> int:
    """How many examples a test of these cases runs: ``CQELS_JOB_EXAMPLES`` (a long run once), else ``default``."""
    return int(os.environ.get("CQELS_JOB_EXAMPLES", default))


@dataclass(frozen=True)
class JobCase:
    """A query, its static data (N-Triples, may be empty), the R2S, and the event files: each a
    list of ``(stream, time, N-Triples)`` events, the files in time order."""

    query: str
    static: str
    r2s: str
    files: tuple[tuple[tuple[str, int, str], ...], ...]

    def lines(self) -> list[list[tuple[str, str, int]]]:
        """Each file's ``(text, file name, line number)`` lines, as the job reads them."""
        return [
            [(json.dumps({"stream": stream, "time": time, "data": data}), file_name(k), number) for number, (stream, time, data) in enumerate(events, 1)]
            for k, events in enumerate(self.files)
        ]

    def write(self, directory: Path) -> None:
        """The files into ``directory``, aged in order: Spark's file source takes the oldest first."""
        directory.mkdir(parents=True, exist_ok=True)
        for k, lines in enumerate(self.lines()):
            path = directory / file_name(k)
            path.write_text("".join(text + "\n" for text, _, _ in lines))
            os.utime(path, (1_000_000 + k, 1_000_000 + k))


def file_name(k: int) -> str:
    return f"part{k:03d}.ndjson"


@st.composite
def stream_pattern(draw, index: int) -> tuple[str, set[str]]:
    stream, predicate, value = STREAMS[index]
    # Mostly the key ?s: a stream of its own subject, or a count window, leaves the query no key.
    subject = "?s" if index == 0 or draw(st.integers(0, 3)) else f"?x{index}"
    windows = ["RANGE 3ms", "RANGE 5ms", "RANGE 8ms", "RANGE 6ms", "RANGE 4ms", "TRIPLES 3", "NOW"] if index == 0 else ["RANGE 3ms", "RANGE 6ms", "NOW"]
    window = draw(st.sampled_from(windows))
    # Sometimes a stream named by a variable: it reads every stream, and the query runs on one partition.
    name = f"<{stream}>" if index == 0 or draw(st.integers(0, 5)) else f"?st{index}"
    return f"STREAM {name} [{window}] {{ {subject} <{EX}{predicate}> {value} }}", {subject, value}


@st.composite
def body(draw) -> tuple[str, set[str], bool]:
    """A group's inside, the variables it surely binds, whether it joins the static labels."""
    text, bound = draw(stream_pattern(0))
    for index in range(1, draw(st.integers(1, 3))):
        pattern, variables = draw(stream_pattern(index))
        how = draw(st.sampled_from(["join", "join", "optional", "union", "minus"]))
        if how == "join":
            text, bound = f"{text} {pattern}", bound | variables
        elif how == "optional":
            text = f"{text} OPTIONAL {{ {pattern} }}"
        elif how == "union":
            text, bound = f"{{ {text} }} UNION {{ {pattern} }}", bound & variables
        else:
            text = f"{text} MINUS {{ {pattern} }}"
    static = draw(st.sampled_from(["", "", "join", "optional"]))
    if static == "join":
        text, bound = f"{text} ?s <{EX}label> ?l .", bound | {"?s", "?l"}
    elif static == "optional":
        text = f"{text} OPTIONAL {{ ?s <{EX}label> ?l }}"
    if draw(st.booleans()):
        text = f"{text} FILTER ({draw(st.sampled_from(['?t > 1', '?t != 3', 'BOUND(?h) || ?t < 4', 'isIRI(?s)']))})"
    if draw(st.booleans()):
        text, bound = f"{text} BIND (?t * 2 AS ?u)", bound | {"?u"}
    return text, bound, static != ""


@st.composite
def query(draw) -> str:
    where, bound, _ = draw(body())
    variables = sorted(bound) or ["?s", "?t"]  # a UNION of patterns sharing no variable binds none surely
    shape = draw(st.sampled_from(["select", "distinct", "group by key", "group by value", "group all", "ask", "construct"]))
    if shape == "ask":
        return f"ASK {{ {where} }}"
    if shape == "construct":
        return f"CONSTRUCT {{ ?s <{EX}seen> ?t }} WHERE {{ {where} }}"
    if shape.startswith("group"):
        keys = {"group by key": ["?s"], "group by value": ["?t"], "group all": []}[shape]
        aggregates = draw(st.lists(st.sampled_from(draw(st.sampled_from([AGGREGATES, MERGEABLE]))), min_size=1, max_size=4, unique=True))
        projection = keys + [a.format(v=draw(st.sampled_from(["?t", "?t", "?h"]))) for a in aggregates]
        having = " HAVING (COUNT(*) > 1)" if draw(st.booleans()) else ""
        text = f"SELECT {' '.join(projection)} WHERE {{ {where} }}{' GROUP BY ' + ' '.join(keys) if keys else ''}{having}"
        names = keys + [a.rsplit("AS ", 1)[1].rstrip(")") for a in aggregates]
    else:
        names = draw(st.lists(st.sampled_from(variables), min_size=1, max_size=3, unique=True))
        text = f"SELECT {'DISTINCT ' if shape == 'distinct' else ''}{' '.join(names)} WHERE {{ {where} }}"
    if draw(st.booleans()):
        # Every projected variable in the order: no two different rows tie at the LIMIT.
        order = " ".join(f"{draw(st.sampled_from(['ASC', 'DESC']))}({name})" for name in names)
        text = f"{text} ORDER BY {order} LIMIT {draw(st.integers(1, 3))}"
    return text


@st.composite
def event_files(draw) -> tuple[tuple[tuple[str, int, str], ...], ...]:
    events, time = [], 0
    for _ in range(draw(st.integers(1, 24))):
        time += draw(st.integers(0, 3))
        stream, predicate, _ = STREAMS[draw(st.integers(0, 2))]
        triples = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=2))
        events.append((stream, time, "".join(f"<{EX}s{s}> <{EX}{predicate}> {INTEGER % o} .\n" for s, o in triples)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(events) - 1)), max_size=2))))
    bounds = [0, *cuts, len(events)]
    return tuple(tuple(events[start:end]) for start, end in itertools.pairwise(bounds) if end > start)


@st.composite
def job_cases(draw) -> JobCase:
    text = draw(query())
    static = STATIC if f"<{EX}label>" in text else ""
    r2s = draw(st.sampled_from(["ISTREAM", "RSTREAM", "DSTREAM"]))
    return JobCase(text, static, r2s, draw(event_files()))
