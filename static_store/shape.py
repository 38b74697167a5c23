"""What a SPARQL request's text tells before any parse: its form, and how it must be run.

The project's parser costs 0.3–0.4 ms for a one-line request, more than pyoxigraph takes to parse and
answer a point lookup, so plain SPARQL goes to pyoxigraph unparsed and only requests that need the
project's checks (``SERVICE`` and ``LOAD``, which remote-access policy governs) are parsed first. A
token scan, skipping strings, IRIs and comments, is enough to decide that; every decision it makes
errs on the safe side: a keyword inside a ``<…>`` comparison read as an IRI, say, can only send a
request down the slower, fully checked path or into a process of its own, never the other way.

>>> shape = query_shape("PREFIX ex: <http://ex.org/> SELECT * WHERE { ?s ex:p ?o } LIMIT 3")
>>> shape.form, shape.parse_first, shape.blocking
('SELECT', False, False)
>>> query_shape("SELECT (COUNT(*) AS ?n) { ?s ?p ?o }").blocking
True
>>> query_shape("ASK { ?s <http://ex.org/p>+ ?o }").blocking
True
>>> update_shape('INSERT DATA { <http://ex.org/a> <http://ex.org/p> "ORDER BY" }').data_kind
'INSERT'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_TOKENS = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>\#[^\n\r]*)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\" | '''(?:[^'\\]|\\.|'(?!''))*''' | "(?:[^"\\\n\r]|\\.)*" | '(?:[^'\\\n\r]|\\.)*')
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$][\w\u00b7\u0300-\u036f\u203f-\u2040]+)
    | (?P<bnode>_:[\w.\-]*)
    | (?P<name>[^\W\d][\w.\-]*(?::[\w.\-%\\:]*)? | :[\w.\-%\\:]*)
    | (?P<number>\d[\w.]*)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
# Operators whose first solution may come only after the whole input is read: aggregation, sorting,
# the hash build of MINUS and EXISTS, and sub-queries (which may hold any of these).
_BLOCKING_KEYWORDS = frozenset(
    {"GROUP", "ORDER", "HAVING", "COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "MINUS", "EXISTS"}
)
# Keywords only the project's checks may let through: remote access and the server's file system.
_CHECKED_KEYWORDS = frozenset({"SERVICE", "LOAD"})


@dataclass(frozen=True)
class QueryShape:
    """``form`` is SELECT, ASK, CONSTRUCT or DESCRIBE (None when the text has none of them).

    ``parse_first``: the project's parser and checks must see the query before pyoxigraph runs it.
    ``blocking``: the evaluation may compute long before its first solution (aggregates, ORDER BY,
    unbounded property paths, MINUS/EXISTS, sub-queries), so a deadline checked between solutions
    would not stop it in time.
    """

    form: str | None
    parse_first: bool
    blocking: bool


@dataclass(frozen=True)
class UpdateShape:
    """``data_kind`` is INSERT or DELETE when every operation of the request is an ``INSERT DATA``
    (or every one a ``DELETE DATA``), without blank nodes in a deletion nor blank node labels in a
    request of several operations (which the project's checks look at), else None.

    ``data_keywords`` are the offsets of the ``DELETE`` keywords of a DELETE DATA request.
    """

    data_kind: str | None
    data_keywords: tuple[tuple[int, int], ...]


def _words(text: str):
    """``(kind, upper-cased value, start, end)`` of every token but spaces and comments."""
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind in ("space", "comment"):
            continue
        value = match.group()
        yield kind, value.upper() if kind == "name" else value, match.start(), match.end()


def query_shape(text: str) -> QueryShape:
    """The shape of a query; those of short texts, which clients send again and again, are kept."""
    return _short_query_shape(text) if len(text) <= _KEPT_TEXT_LENGTH else _query_shape(text)


_KEPT_TEXT_LENGTH = 4096


@lru_cache(maxsize=1024)
def _short_query_shape(text: str) -> QueryShape:
    return _query_shape(text)


def _query_shape(text: str) -> QueryShape:
    form = None
    parse_first = blocking = False
    forms = 0  # a second form keyword is a sub-query's SELECT
    previous = ("other", "")  # the token before: a `*` or `+` after a path element is a closure
    for kind, value, _, _ in _words(text):
        if kind == "name":
            if value in _FORMS:
                form = form or value
                forms += 1
            elif value in _BLOCKING_KEYWORDS:
                blocking = True
            elif value in _CHECKED_KEYWORDS:
                parse_first = True
        elif kind == "other" and value in "*+" and _ends_path_element(*previous):
            blocking = True
        previous = (kind, value)
    return QueryShape(form, parse_first, blocking or forms > 1)


def _ends_path_element(kind: str, value: str) -> bool:
    """Whether a `*` or `+` after this token is a path closure (an IRI, a prefixed name, `a`, `)`),
    not `SELECT *` or arithmetic on a variable or number (`(…) * 2` is taken for a closure: the safe side)."""
    if kind == "iri":
        return True
    if kind == "name":
        return value not in ("SELECT", "DISTINCT", "REDUCED")
    return value == ")"


def update_shape(text: str) -> UpdateShape:
    """Whether ``text`` is a pure INSERT DATA or DELETE DATA request (see ``UpdateShape``)."""
    kinds = set()  # INSERT, DELETE
    deletes = []
    operations = 0
    blank = False  # a blank node in the data: DELETE DATA may hold none
    labelled = False  # a blank node label: the project's checks refuse one shared by two operations
    depth = 0
    previous: tuple[str, int, int] | None = None  # the top-level keyword before, with its offsets
    for kind, value, start, end in _words(text):
        if kind == "other" and value == "{":
            depth += 1
        elif kind == "other" and value == "}":
            depth -= 1
        elif depth > 0:
            labelled = labelled or kind == "bnode"
            blank = blank or kind == "bnode" or value == "["
        elif kind == "name" and value == "DATA" and previous is not None and previous[0] in ("INSERT", "DELETE"):
            kinds.add(previous[0])
            operations += 1
            if previous[0] == "DELETE":
                deletes.append(previous[1:])
        elif kind == "name" and value in ("INSERT", "DELETE"):
            pass  # decided by the next token
        elif (kind == "name" and value in ("PREFIX", "BASE")) or kind == "iri" or value == ";":
            pass
        elif kind == "name" and value.endswith(":") and previous is not None and previous[0] == "PREFIX":
            pass  # the prefix a PREFIX declaration names
        else:
            return UpdateShape(None, ())
        previous = (value, start, end) if kind == "name" else None
    if kinds == {"INSERT"} and not (labelled and operations > 1):
        return UpdateShape("INSERT", ())
    if kinds == {"DELETE"} and not blank:
        return UpdateShape("DELETE", tuple(deletes))
    return UpdateShape(None, ())
