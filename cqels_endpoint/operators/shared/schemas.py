"""The output columns of the operators that combine inputs, and the columns two inputs share."""

from __future__ import annotations

from collections.abc import Sequence


def pattern_schema(pattern: Sequence[str | None]) -> tuple[str, ...]:
    """The variables of a triple pattern (subject, predicate, object; None = constant), first occurrence order."""
    schema: list[str] = []
    for name in pattern:
        if name is not None and name not in schema:
            schema.append(name)
    return tuple(schema)


def join_schema(input_schemas: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The output schema of a join: every input's variables, in order of first appearance."""
    schema: list[str] = []
    for input_schema in input_schemas:
        for name in input_schema:
            if name not in schema:
                schema.append(name)
    return tuple(schema)


def union_schema(left: Sequence[str], right: Sequence[str]) -> tuple[str, ...]:
    """The left columns, then the right columns the left lacks: the schema of UNION and OPTIONAL, and
    of a left row merged with a right row, which the condition of a (NOT) EXISTS reads."""
    return tuple(left) + tuple(c for c in right if c not in left)
