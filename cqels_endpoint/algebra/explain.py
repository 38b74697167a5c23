"""Human-readable explanation of a query's logical plan: algebra, optimised algebra, split."""

from __future__ import annotations

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.passes import RULES, optimize
from cqels_endpoint.algebra.passes.split_static import streams_and_caches
from cqels_endpoint.algebra.sexpr import Printer, _flat, to_sexpr
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.query import ast
from cqels_endpoint.query.windows import format_window


def explain(
    query: ast.Query, *, full_iris: bool = False, rules: tuple = RULES, dialect: str | None = None
) -> tuple[list[str], n.AlgebraQuery]:
    """The logical sections of ``cqels explain`` — the translated algebra (in ``dialect``,
    ``to_algebra``), the algebra after ``rules``, the static/stream split — and the optimised
    algebra (``plan.explain.explain_query`` adds its physical plan)."""
    algebra = to_algebra(query, dialect=dialect)
    optimised = optimize(algebra, rules)
    prefixes = {} if full_iris else dict(algebra.prefixes)
    names = ", ".join(rule.__name__ for rule in rules) or "no passes"
    sections = [
        "# algebra",
        to_sexpr(algebra, prefixes),
        "",
        f"# optimised ({names})",
        to_sexpr(optimised, prefixes),
        "",
        "# static/stream split",
        split_summary(optimised, prefixes),
    ]
    return sections, optimised


def split_summary(query: n.AlgebraQuery, prefixes: dict[str, str] | None = None) -> str:
    """Each stream pattern with its stream and window, each static cache with its join variables."""
    printer = Printer(dict(prefixes or {}))
    streams, caches = streams_and_caches(query.pattern)
    if not streams:
        return "no stream patterns: a one-shot query, evaluated on the static store as a whole"
    lines = [f"stream patterns ({len(streams)}):"]
    for i, stream in enumerate(streams, 1):
        window_name = "" if stream.window_name is None else f" as window {printer.iri(stream.window_name)}"
        lines.append(
            f"  S{i}  {printer.term(stream.stream)} {format_window(stream.window)}{window_name}{_line(stream)}"
        )
        for triple in stream.triples:
            terms = (printer.term(triple.subject), _flat(printer.path(triple.predicate)), printer.term(triple.object))
            lines.append("        " + " ".join(terms))
    if not caches:
        lines.append("static caches: none")
    else:
        lines.append(f"static caches ({len(caches)}):")
    for i, cache in enumerate(caches, 1):
        if cache.join_vars:
            keys = "joined on " + " ".join(printer.term(v) for v in cache.join_vars)
        else:
            keys = "no join variables (joined as a cross product)"
        lines.append(f"  C{i}  {keys}{_line(cache)}")
        lines.extend("        " + line for line in to_sexpr(cache.pattern, printer.prefixes).splitlines())
    return "\n".join(lines)


def _line(node: n.Pattern) -> str:
    return "" if node.span is None else f"  (line {node.span.line})"
