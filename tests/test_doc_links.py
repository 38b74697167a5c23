"""The documentation's relative links lead somewhere: every ``[text](path#anchor)`` of the README,
``docs/``, the examples' and the benchmarks' READMEs names a file of the checkout and, for a Markdown
file, a heading of it (GitHub's anchors). The README's reference moved into ``docs/`` pages (issue
31); this keeps the links between them true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paths import ROOT

FENCED = re.compile(r"```.*?```", re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#+ (.*)$", re.M)
PAGES = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").rglob("README.md")]
)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> anchor("Two dialects: CQELS 1 and CQELS-QL 2.0")
    'two-dialects-cqels-1-and-cqels-ql-20'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def prose(page: Path) -> str:
    return FENCED.sub("", page.read_text(encoding="utf-8"))


def anchors(page: Path) -> set[str]:
    return {anchor(heading) for heading in HEADING.findall(prose(page))}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_names_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_the_readme_maps_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [page.name for page in sorted((ROOT / "docs").glob("*.md")) if f"](docs/{page.name})" not in readme] == []


def test_docs_http_lists_every_serve_flag() -> None:
    import argparse

    from cqels_endpoint.cli import build_parser

    [commands] = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    flags = {flag for action in commands.choices["serve"]._actions for flag in action.option_strings if flag.startswith("--")}
    table = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(--[a-z-]+)", table, re.M))
    assert sorted(flag for flag in flags - {"--help"} if not flag.startswith("--no-") and flag not in rows) == []
