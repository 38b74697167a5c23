"""The two continuous query languages this engine reads, and the rule that picks one per query.

The grammar reads both into one AST; they differ in what some constructs *mean*
(docs/ARCHITECTURE.md, "Dialects"):

- ``cqels``: CQELS 1 as the seed papers define it, with C-SPARQL's and RSP-QL's forms:
  ``[RANGE d]`` re-evaluated at every event over the last ``d``, ``[TRIPLES n]`` the last ``n``
  triples of each triple pattern, HAVING as SPARQL 1.1 defines it, directional windows under the
  query's R2S (ISTREAM by default: an anchor that adds nothing emits nothing).
- ``cqels2``: CQELS-QL 2.0 (``CQELS-QL_SPEC.md``): ``[RANGE d]`` tumbling (§3.1), ``[TRIPLES n]``
  the last ``n`` statements of the stream whatever they match, each triple pattern reading the
  stream seeing those it matches, counted from the query's registration (§3.1; beside a
  directional window, the last ``n`` with ``t ≤`` the anchor), HAVING naming SELECT aliases (§9),
  one result per anchor of a directional window (§3.2): an emission at every anchor (and early
  evaluation), empty or unchanged ones too, RSTREAM by default (``engine.directional.query_r2s``).

A query gets ``cqels2`` when it is asked for (``Engine(dialect=…)``, ``cqels serve --dialect``,
``?dialect=`` on a registration) or, with the default ``auto``, when it starts with CQELS-QL 2.0's
``REGISTER QUERY Name AS``; every other query reads as ``cqels``.
"""

from __future__ import annotations

from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import Named


class Dialect(Named):
    """What a query means: a setting (``AUTO`` picks per query) or the dialect it resolved to."""

    AUTO = "auto"
    CQELS = "cqels"
    CQELS2 = "cqels2"


def resolve_dialect(setting: str | None, query: ast.Query) -> Dialect:
    """The dialect ``query`` reads in under ``setting`` (None: ``auto``): an explicit dialect is
    kept, ``auto`` is ``cqels2`` for a ``REGISTER QUERY Name AS`` query and ``cqels`` otherwise."""
    chosen = Dialect.choose(setting or Dialect.AUTO.value, "dialect")
    if chosen is not Dialect.AUTO:
        return chosen
    register = query.register
    return Dialect.CQELS2 if register is not None and register.kind == "QUERY" else Dialect.CQELS


def why_dialect(setting: str | None, query: ast.Query) -> str:
    """One line saying which dialect ``query`` reads in and why (``cqels explain``, ``GET /queries/NAME``)."""
    dialect = resolve_dialect(setting, query)
    if (setting or Dialect.AUTO.value) != Dialect.AUTO.value:
        return f"{dialect} (asked for)"
    if dialect is Dialect.CQELS2:
        return f"{dialect} (REGISTER QUERY … AS)"
    return f"{dialect} (the default; REGISTER QUERY … AS or dialect=cqels2 selects CQELS-QL 2.0)"
