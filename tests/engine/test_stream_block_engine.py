"""OPTIONAL, UNION and the other group elements inside a CQELS ``STREAM`` block, run by the engine.

A ``STREAM :s [window] { P }`` block means what RSP-QL's ``FROM NAMED WINDOW :w ON :s [window]``
with ``WINDOW :w { P }`` means: the same events give the same emissions, in the incremental engine
and in re-evaluation, for every R2S.
"""

from __future__ import annotations

import pytest

from cqels_endpoint import Engine

EX = "http://ex.org/"
S = EX + "s"
PREFIX = f"PREFIX : <{EX}>\n"
TURTLE_PREFIX = f"@prefix : <{EX}> .\n"
MODES = ("incremental", "recompute")
R2S = ("ISTREAM", "RSTREAM", "DSTREAM")

# Bodies of the block; each is run as a STREAM block and as a WINDOW block.
BODIES = {
    "optional-union": """
        ?who :at ?room .
        OPTIONAL { ?who :badge ?badge }
        { ?room :kind ?kind } UNION { ?room :label ?kind }
    """,
    "srbench-shape": """
        ?who :at ?room ; :age ?age .
        OPTIONAL { ?who :badge ?badge FILTER (?badge != :void) }
        { ?who a :Staff } UNION { ?who a :Visitor OPTIONAL { ?who :host ?host } }
        FILTER (?age > 17)
    """,
    "minus-bind-values-nested": """
        ?who :at ?room .
        MINUS { ?who :badge :void }
        { ?who :age ?age BIND (?age + 1 AS ?next) }
        VALUES ?room { :hall :lab }
    """,
}
WINDOWS = ("[RANGE 10ms]", "[RANGE 10ms SLIDE 5ms]", "[TRIPLES 2]", "[NOW]")

EVENTS = [
    (1, ":ann :at :hall . :hall :kind :Room ."),
    (2, ":ann :badge :b1 . :ann :age 30 . :ann a :Staff ."),
    (4, ':bob :at :lab . :lab :label "Lab" . :bob :age 16 .'),
    (6, ":bob :age 20 . :bob a :Visitor . :bob :host :ann ."),
    (8, ":cat :at :hall . :cat :badge :void . :cat :age 40 . :cat a :Visitor ."),
    (9, ":dan :at :yard . :yard :kind :Outside . :dan :age 50 . :dan a :Staff ."),
    (13, ":ann :at :lab . :ann :badge :b2 ."),
    (20, ":bob :at :hall ."),
]


def stream_query(body: str, window: str) -> str:
    return PREFIX + f"SELECT * WHERE {{ STREAM :s {window} {{ {body} }} }}"


def window_query(body: str, window: str) -> str:
    return PREFIX + f"SELECT * FROM NAMED WINDOW :w ON :s {window} WHERE {{ WINDOW :w {{ {body} }} }}"


def run(text: str) -> dict[tuple[str, str], list[tuple[int, list[tuple]]]]:
    """The emissions of ``text`` registered once per mode and R2S on one engine, events replayed."""
    engine = Engine()
    logs = {}
    for mode in MODES:
        for r2s in R2S:
            log = logs[mode, r2s] = []
            query = engine.register(text, mode=mode, r2s=r2s)
            query.subscribe(log.append)
    for time, data in EVENTS:
        engine.push(S, TURTLE_PREFIX + data, time=time)
    engine.advance(40)
    engine.close()
    return {key: [(e.time, _rows(e.rows)) for e in log] for key, log in logs.items()}


def _rows(rows) -> list[tuple]:
    return sorted(tuple(sorted((var, str(term)) for var, term in row.items())) for row in rows)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_stream_block_emits_as_the_window_block_in_both_modes(body: str, window: str) -> None:
    by_stream = run(stream_query(body, window))
    by_window = run(window_query(body, window))
    for r2s in R2S:
        incremental = by_stream["incremental", r2s]
        assert incremental == by_stream["recompute", r2s], r2s
        assert incremental == by_window["incremental", r2s] == by_window["recompute", r2s], r2s
    assert any(rows for _, rows in by_stream["incremental", "ISTREAM"])


def test_optional_and_union_inside_a_stream_block_bind_what_they_match() -> None:
    logs = run(stream_query(BODIES["optional-union"], "[RANGE 10ms]"))
    for mode in MODES:
        snapshots = dict(logs[mode, "RSTREAM"])
        hall = f"<{EX}hall>"
        # ann has no badge yet: the OPTIONAL leaves ?badge unbound; the :kind branch binds ?kind.
        assert snapshots[1] == [(("kind", f"<{EX}Room>"), ("room", hall), ("who", f"<{EX}ann>"))], mode
        assert snapshots[2] == [
            (("badge", f"<{EX}b1>"), ("kind", f"<{EX}Room>"), ("room", hall), ("who", f"<{EX}ann>"))
        ], mode
        # bob's room has a :label, not a :kind: the other UNION branch.
        assert (("kind", '"Lab"'), ("room", f"<{EX}lab>"), ("who", f"<{EX}bob>")) in snapshots[4], mode
        # ann's triples at 1 and 2 have left the 10 ms window at 13; her new badge is b2 and :lab has its :label.
        assert (("badge", f"<{EX}b2>"), ("kind", '"Lab"'), ("room", f"<{EX}lab>"), ("who", f"<{EX}ann>")) in snapshots[13]
        assert not [row for row in snapshots[13] if ("who", f"<{EX}ann>") in row and ("room", hall) in row], mode
