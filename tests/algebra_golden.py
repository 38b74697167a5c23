"""Golden algebra fixtures: ``tests/fixtures/algebra/<kind>/<case>.rq`` and the expected ``.sse``.

``UPDATE_FIXTURES=1 pytest …`` rewrites the ``.sse`` files from the current output; review every
rewritten file by eye before keeping it (``git diff tests/fixtures``).
"""

from __future__ import annotations

import os
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "algebra"
UPDATE = os.environ.get("UPDATE_FIXTURES") == "1"


def cases(kind: str) -> list[Path]:
    """The ``.rq`` files of one fixture directory, sorted."""
    found = sorted((FIXTURES / kind).glob("*.rq"))
    assert found, f"no fixtures under {FIXTURES / kind}"
    return found


def check_golden(query_file: Path, actual: str) -> None:
    """``actual`` equals the ``.sse`` beside ``query_file`` (rewritten first under UPDATE_FIXTURES=1)."""
    expected_file = query_file.with_suffix(".sse")
    if UPDATE:
        expected_file.write_text(actual + "\n", encoding="utf-8")
    assert expected_file.exists(), f"no {expected_file.name}: run with UPDATE_FIXTURES=1, then review it"
    assert actual == expected_file.read_text(encoding="utf-8").rstrip("\n")
