"""Rebuilding frozen algebra trees: the one traversal helper the optimizer passes share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from cqels_endpoint.terms import Node


def map_children(node: Node, fn: Callable[[Node], Node]) -> Node:
    """``node`` with ``fn`` applied to each direct child node (looking through tuples).

    Returns ``node`` itself when nothing changed, so untouched sub-trees are shared; the span is kept.
    """
    changes = {}
    for f in dataclasses.fields(node):
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        new = _map_value(value, fn)
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node


def _map_value(value: object, fn: Callable[[Node], Node]) -> object:
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        mapped = tuple(_map_value(item, fn) for item in value)
        return value if all(a is b for a, b in zip(mapped, value)) else mapped
    return value


def bottom_up(node: Node, fn: Callable[[Node], Node]) -> Node:
    """Applies ``fn`` to every node of the tree, children first (EXISTS patterns included)."""
    return fn(map_children(node, lambda child: bottom_up(child, fn)))
