"""The parameters a query text declares for its template: ``# @param ?var`` comment lines.

A comment is ignored by SPARQL, so a template's text stays a plain query; what the parameters
mean — a one-row table of their terms first in the WHERE — is the algebra's (``algebra.parameters``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cqels_endpoint.errors import QuerySyntaxError, Span

_PARAM_LINE = re.compile(r"^[ \t]*#[ \t]*@param\b(.*)$", re.MULTILINE)
_PARAM = re.compile(r"[?$]([A-Za-z_][A-Za-z0-9_]*)\Z")


@dataclass(frozen=True)
class Parameter:
    """A template parameter: the variable's name (no ``?``) and where the text declares it
    (``None`` when it was given beside the text, as a request's ``parameter``)."""

    name: str
    span: Span | None = None


def declared_parameters(text: str) -> tuple[Parameter, ...]:
    """The parameters ``text`` declares in ``# @param ?var`` lines (several per line, ``$var``
    too), in order; ``QuerySyntaxError`` for a malformed or repeated declaration.

    >>> [p.name for p in declared_parameters("# @param ?who $room\\nSELECT * WHERE { ?who <http://e/p> ?room }")]
    ['who', 'room']
    """
    found: list[Parameter] = []
    for line in _PARAM_LINE.finditer(text):
        offset = line.start(1)
        tokens = list(re.finditer(r"\S+", line.group(1)))
        if not tokens:
            raise QuerySyntaxError.at("@param names no variable: write '# @param ?name'", text, line.start(), line.end())
        for token in tokens:
            start, end = offset + token.start(), offset + token.end()
            match = _PARAM.match(token.group())
            if match is None:
                msg = f"@param takes variables like ?name, not {token.group()!r}"
                raise QuerySyntaxError.at(msg, text, start, end)
            if any(p.name == match.group(1) for p in found):
                raise QuerySyntaxError.at(f"parameter ?{match.group(1)} is declared twice", text, start, end)
            found.append(Parameter(match.group(1), Span.at(text, start, end)))
    return tuple(found)
