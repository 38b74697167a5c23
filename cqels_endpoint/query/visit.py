"""Generic traversal of AST (and algebra) nodes: every node is a frozen dataclass."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from cqels_endpoint.terms import Node


def children(node: object) -> Iterator[object]:
    """The direct child nodes of ``node``, looking through tuples (and tuples of tuples)."""
    if not dataclasses.is_dataclass(node):
        return
    for f in dataclasses.fields(node):
        if f.name == "span":
            continue
        yield from _nodes_in(getattr(node, f.name))


def _nodes_in(value: object) -> Iterator[object]:
    if isinstance(value, Node) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _nodes_in(item)


def walk(node: object) -> Iterator[object]:
    """``node`` and all its descendants, depth-first, parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(children(current))))
