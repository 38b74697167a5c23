from collections.abc import Callable, Mapping

from pyoxigraph import BlankNode, Literal, NamedNode

from cqels_endpoint.query import ast

Term = NamedNode | BlankNode | Literal

class NumericExpression:
    fallback: Callable[[Mapping[str, object]], Term]
    def __call__(self, row: Mapping[str, object]) -> Term: ...
    def passes(self, row: Mapping[str, object]) -> bool: ...

def compile_numeric(expr: ast.Expression, fallback: Callable[[Mapping[str, object]], Term]) -> NumericExpression | None: ...
