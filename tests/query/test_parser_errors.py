"""Golden error messages: each ``tests/fixtures/errors/NAME.rq`` (a query) or ``NAME.ru`` (an update)
must fail with exactly the text in ``NAME.txt`` (``str()`` of the ``QuerySyntaxError``: the message,
the position and the quoted line with its caret).

A query whose first line is ``# parse: one-shot`` is parsed with ``allow_streams=False``. Run with
``UPDATE_FIXTURES=1`` to (re)write the ``.txt`` files, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from paths import TESTS

from cqels_endpoint import parse_query, parse_update
from cqels_endpoint.errors import QuerySyntaxError

FIXTURES = TESTS / "fixtures" / "errors"
CASES = sorted([*FIXTURES.glob("*.rq"), *FIXTURES.glob("*.ru")])
UPDATE = os.environ.get("UPDATE_FIXTURES") == "1"
ONE_SHOT = "# parse: one-shot"


def parse_fixture(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ru":
        parse_update(text)
    else:
        parse_query(text, allow_streams=not text.startswith(ONE_SHOT))


def test_every_friendly_error_has_a_fixture() -> None:
    names = {path.stem for path in CASES}
    assert {
        "window-without-unit",
        "slide-longer-than-range",
        "undeclared-prefix",
        "stream-in-one-shot-query",
        "unknown-window-keyword",
        "unterminated-string",
        "missing-closing-brace",
        # CQELS-QL 2.0 (issue 17)
        "bare-name-for-static-graph",
        "window-unit-not-allowed",
        "slide-step-longer-than-extent",
        "stream-name-not-declared",
        "static-option-twice",
        "unknown-emit-policy",
        "seq-with-commas",
    } <= names


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.name)
def test_error_message_matches_golden_file(path: Path) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_fixture(path)
    error = raised.value
    assert type(error) is QuerySyntaxError
    actual = str(error)
    expected_file = path.with_suffix(".txt")
    if UPDATE:
        expected_file.write_text(actual + "\n", encoding="utf-8")
    assert expected_file.exists(), f"no {expected_file.name}: run with UPDATE_FIXTURES=1, then review it"
    assert actual == expected_file.read_text(encoding="utf-8").removesuffix("\n")


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.name)
def test_error_position_agrees_with_its_span(path: Path) -> None:
    """The SyntaxError attributes, the span and the source text describe the same place."""
    with pytest.raises(QuerySyntaxError) as raised:
        parse_fixture(path)
    error = raised.value
    span = error.span
    text = path.read_text(encoding="utf-8")
    assert (error.lineno, error.offset) == (span.line, span.column)
    assert error.end_lineno == span.end_line
    lines = text.splitlines()
    line_start = sum(len(line) + 1 for line in lines[: span.line - 1])
    assert line_start + span.column - 1 == span.start
    assert error.text == lines[span.line - 1]
