"""Parameterised queries: a template is translated once, and an instance binds its parameters by
rewriting the template's algebra, never its text.

The translation puts a ``ParameterTable`` of the parameters first in the WHERE group, where a
one-row ``VALUES`` written at the top of the WHERE would be. Binding an instance gives that table
its one row of terms (SPARQL's own pre-binding: the group joins the row with the rest, so the
results are those of substituting the terms wherever SPARQL defines substitution); an instance
group makes it the ``InstanceTable`` of all its instances' rows (``engine.instances``). A ``TRIPLES
n`` window is not SPARQL and counts the triples matching the *template's* pattern (in the cqels2
dialect, the stream's statements), so an instance sees what is among the last n of anybody, not
the last n of its own terms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.rewrite import map_children
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.algebra.variables import mentioned
from cqels_endpoint.errors import ArgumentError, QuerySyntaxError
from cqels_endpoint.query import ast
from cqels_endpoint.query.parameters import Parameter
from cqels_endpoint.terms import IRI, Literal, Var


@dataclass(frozen=True, eq=False)
class Template:
    """A query with parameters: its text, its algebra (with the ``ParameterTable``) and the
    parameters' names, in order."""

    text: str
    algebra: n.AlgebraQuery
    parameters: tuple[str, ...]


def make_template(query: ast.Query, parameters: Sequence[Parameter | str], dialect: str | None = None) -> Template:
    """The template of a parsed query with ``parameters`` (declared ones carry their span), read
    in ``dialect`` (``to_algebra``).

    Every parameter must occur in the query below its SELECT/CONSTRUCT/ASK head: binding one that
    does not would multiply nothing and silently mean nothing. ``QuerySyntaxError`` at a declared
    parameter, ``ArgumentError`` for one given beside the text."""
    declared = [p if isinstance(p, Parameter) else Parameter(p) for p in parameters]
    names: list[str] = []
    for parameter in declared:
        if parameter.name in names:
            _fail(f"parameter ?{parameter.name} is given twice", query.text, parameter)
        names.append(parameter.name)
    if not names:
        msg = "a template declares at least one parameter ('# @param ?var')"
        raise ArgumentError(msg)
    algebra = to_algebra(query, tuple(Var(name) for name in names), dialect)
    # Read on the parsed query: the algebra's projection and SELECT expressions are the head's.
    form = query.form
    used = mentioned(form.where) | mentioned(form.modifiers) | mentioned(form.values)
    for parameter in declared:
        if Var(parameter.name) not in used:
            _fail(f"parameter ?{parameter.name} does not occur in the WHERE clause", query.text, parameter)
    return Template(query.text, algebra, tuple(names))


def bind_parameters(algebra: n.AlgebraQuery, terms: Mapping[str, IRI | Literal]) -> n.AlgebraQuery:
    """The template's ``algebra`` with its parameters bound to ``terms`` (a one-row table)."""

    def bind(table: n.ParameterTable) -> n.Table:
        return n.Table(table.vars, (tuple(terms[var.name] for var in table.vars),), span=table.span)

    return _replace_parameters(algebra, bind)


def with_instance_table(algebra: n.AlgebraQuery) -> n.AlgebraQuery:
    """The template's ``algebra`` with its parameters made an ``InstanceTable`` (no rows yet):
    the plan an instance group shares, whose rows the group sets."""

    def instances(table: n.ParameterTable) -> n.InstanceTable:
        return n.InstanceTable((n.INSTANCE, *table.vars), (), span=table.span)

    return _replace_parameters(algebra, instances)


def _replace_parameters(algebra: n.AlgebraQuery, make) -> n.AlgebraQuery:
    found = []

    def convert(node):
        if isinstance(node, n.ParameterTable):
            found.append(node)
            return make(node)
        return map_children(node, convert)

    pattern = convert(algebra.pattern)
    if len(found) != 1:
        msg = f"a template's algebra holds one parameter table, not {len(found)}"
        raise ValueError(msg)
    return dataclasses.replace(algebra, pattern=pattern)


def _fail(message: str, text: str, parameter: Parameter) -> None:
    if parameter.span is not None:
        raise QuerySyntaxError(message, text, parameter.span)
    raise ArgumentError(message)
