"""Aggregation by recomputation: the twin of the compiled ``operators/_aggregate.pyx``.

The twin keeps, per group, the multiset of its input rows' arguments (by lineage) and, at
punctuation, recomputes every aggregate of every changed group from that multiset — sorting the
values from scratch — instead of maintaining counts and sorted lists. Key evaluation, emission and
dictionary references are those of ``shared.aggregate.GroupAggregateBase``, so the two differ
exactly in how a group's aggregates are computed; the property tests compare them after every tick.
"""

from __future__ import annotations

from typing import Any

from cqels_endpoint.operators.shared.aggregate import GroupAggregateBase
from cqels_endpoint.runtime.aggregates import finish, value_key
from cqels_endpoint.runtime.functions import integer_literal


class GroupAggregate(GroupAggregateBase):
    """Aggregation by recomputation of the changed groups (the twin of the incremental operator)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._members: dict[tuple, dict[tuple, tuple]] = {}  # key -> {lineage: arguments}
        if self._implicit is not None:
            self._members[()] = {}

    def _add(self, key: tuple, arguments: tuple, lineage: tuple) -> None:
        self._members.setdefault(key, {})[lineage] = arguments

    def _remove(self, key: tuple, arguments: tuple, lineage: tuple) -> None:
        del self._members[key][lineage]

    def _result(self, key: tuple) -> tuple | None:
        members = self._members.get(key)
        if members is None:
            return None
        if not members and key != self._implicit:
            del self._members[key]
            return None
        results = []
        for position, spec in enumerate(self._specs):
            arguments = [row[position] for row in members.values()]
            values = [value for value in arguments if value is not None]
            errors = len(arguments) - len(values)
            if spec.distinct:
                values = list(set(values))
            if spec.name == "COUNT":
                results.append(integer_literal(len(values)))
            else:
                values.sort(key=value_key)
                results.append(finish(spec.name, values, errors, spec.separator))
        return tuple(results)
