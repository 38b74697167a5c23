"""The shell sessions a README shows, read back so that a test can run them: the ``text`` blocks of
a section, and in them each ``$ `` command (with its ``\\`` continuations) and the output lines shown
under it. tests/http/test_readme_session.py runs the README's curl session,
tests/examples/test_cqels_ql2_folder.py the one of examples/cqels-ql-2/README.md."""

from __future__ import annotations

import re
from pathlib import Path


def section_blocks(readme: Path, heading: str) -> list[list[str]]:
    """The ``text`` blocks of the section ``## HEADING`` of ``readme``, as lists of lines."""
    text = readme.read_text(encoding="utf-8")
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```text\n(.*?)```", section, re.S)]


def commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` for each ``$ `` line of a block."""
    found: list[tuple[str, list[str]]] = []
    continued = False
    for line in lines:
        if line.startswith("$ ") or continued:
            command = line.removeprefix("$ ").rstrip("\\").strip()
            if continued:
                found[-1] = (found[-1][0] + " " + command, [])
            else:
                found.append((command, []))
            continued = line.endswith("\\")
        elif found:
            found[-1][1].append(line)
    return found
