"""Extension functions called by IRI (SPARQL 1.1 §17.6): ``<urn:cqels:fn:haversine>(…)``.

Built in, as in CQELS-QL 2.0 (``CQELS-QL_SPEC.md`` §9):

- ``urn:cqels:fn:haversine(lat1, lon1, lat2, lon2)``: the great-circle distance in kilometres
  (xsd:double) between two points given in decimal degrees, on a sphere of radius 6371 km;
- ``urn:cqels:fn:levenshtein(a, b)``: the edit distance (xsd:integer) between the lexical forms of
  two string literals, counted in code points;
- the GeoSPARQL functions of ``geosparql`` (``geof:sfWithin``, ``geof:distance``, …). pyoxigraph
  implements some ``geof:`` functions itself, differently (no EPSG:4326 axis order, no angular
  units, a spherical distance); the registry's entries replace them wherever it is passed.

``register_function(iri, function)`` adds more, like rdflib's ``register_custom_function``. The
registry is process-global, not per engine, because one function must mean the same in every
evaluator of a query: the interpreted expressions of the incremental mode, the pyoxigraph
re-evaluation of the recompute oracle, the static caches and one-shot ``/query``, the last of which
belongs to no engine. A call looks the IRI up when it is evaluated, so every evaluator sees the
same function at the same time, and registering or replacing one takes effect in running queries.

``function`` takes the evaluated arguments as pyoxigraph terms and returns a pyoxigraph term, or a
Python ``bool``/``int``/``float``/``Decimal``/``str`` (written as xsd:boolean, xsd:integer,
xsd:double, xsd:decimal, xsd:string). The SPARQL error semantics apply: an unbound argument, a call
with a number of arguments the function does not take, a function raising ``ExpressionError`` or
returning ``None`` is an expression error (``FILTER`` false, ``BIND`` unbound); any other exception,
or a result of another type, is an expression error too and is logged once per function.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import NamedTuple

from pyoxigraph import BlankNode, Literal, NamedNode

from cqels_endpoint.runtime.functions import geosparql
from cqels_endpoint.runtime.functions.casts import CASTS
from cqels_endpoint.runtime.functions.values import boolean_literal, integer_literal, numeric, numeric_literal, string_value
from cqels_endpoint.runtime.functions.xsd import DECIMAL, RANK_DOUBLE, ExpressionError, format_decimal

log = logging.getLogger("cqels_endpoint.runtime")

HAVERSINE = "urn:cqels:fn:haversine"
LEVENSHTEIN = "urn:cqels:fn:levenshtein"
EARTH_RADIUS_KM = 6371.0


class Extension(NamedTuple):
    """A registered function with the numbers of positional arguments it takes (``high`` None: any)."""

    function: Callable[..., object]
    low: int
    high: int | None


_REGISTRY: dict[str, Extension] = {}
_LOCK = threading.Lock()
_LOGGED: set[str] = set()  # the IRIs whose failure has been logged
_PYOXIGRAPH: list[dict] = [{}]  # the custom_functions of pyoxigraph, rebuilt at each registration


def register_function(iri: str | NamedNode, function: Callable[..., object], *, replace: bool = False) -> None:
    """Make ``function`` callable as ``<iri>(…)`` in every query of this process (module docstring).

    Raises ``ValueError`` for an IRI that is not absolute, an XSD constructor function (those are
    the casts of §17.5), or one already registered unless ``replace``; ``TypeError`` if
    ``function`` is not callable.
    """
    name = _iri(iri)
    if not callable(function):
        msg = f"the function registered for <{name}> must be callable, not {type(function).__name__}"
        raise TypeError(msg)
    if name in CASTS:
        msg = f"<{name}> is an XSD constructor function (a cast); it cannot be replaced"
        raise ValueError(msg)
    with _LOCK:
        if name in _REGISTRY and not replace:
            msg = f"a function is already registered for <{name}>; pass replace=True to replace it"
            raise ValueError(msg)
        _REGISTRY[name] = Extension(function, *_arity(function))
        _LOGGED.discard(name)
        _rebuild()


def unregister_function(iri: str | NamedNode) -> None:
    """Remove the function of ``iri`` (built-ins too); a call to it is an error from then on.
    ``KeyError`` if none is registered."""
    name = _iri(iri)
    with _LOCK:
        if name not in _REGISTRY:
            msg = f"no function is registered for <{name}>"
            raise KeyError(msg)
        del _REGISTRY[name]
        _rebuild()


def registered_functions() -> dict[str, Callable[..., object]]:
    """The registered functions by IRI (a copy)."""
    return {name: extension.function for name, extension in _REGISTRY.items()}


def as_at_import(iri: str) -> bool:
    """Whether ``iri`` names what it names in a fresh process (a built-in, not replaced): only such
    calls may run in other processes, such as Spark's Python workers, which see no registration."""
    extension = _REGISTRY.get(iri)
    return extension is not None and _BUILT_INS.get(iri) is extension.function


def call_extension(iri: str, args: list) -> NamedNode | BlankNode | Literal:
    """The value of ``<iri>(args)`` on evaluated arguments; ``ExpressionError`` for every failure."""
    extension = _REGISTRY.get(iri)
    if extension is None or len(args) < extension.low or (extension.high is not None and len(args) > extension.high):
        raise ExpressionError
    try:
        result = extension.function(*args)
    except ExpressionError:
        raise
    except Exception as error:
        _log_once(iri, f"raised {type(error).__name__}: {error}")
        raise ExpressionError from None
    return _to_term(iri, result)


def custom_functions(called: Iterable[str] = ()) -> dict[NamedNode, Callable[..., object]]:
    """The registry as pyoxigraph's ``custom_functions=`` of ``Store.query``: each entry calls
    ``call_extension`` and answers ``None`` (an error, to pyoxigraph) where it raises. ``called``:
    extension IRIs a continuous query calls; each one not registered answers ``None`` too, the
    expression error the interpreter's ``call_extension`` gives (pyoxigraph would refuse the query)."""
    functions = _PYOXIGRAPH[0]
    missing = [NamedNode(iri) for iri in called if NamedNode(iri) not in functions]
    return functions | dict.fromkeys(missing, _unregistered) if missing else functions


def _unregistered(*_args: object) -> None:
    return None


# --------------------------------------------------------------------------- the built-ins


def haversine(lat1, lon1, lat2, lon2) -> Literal:
    """The great-circle distance in km between (lat1, lon1) and (lat2, lon2), numerics in degrees;
    a latitude outside [-90, 90] or a longitude outside [-180, 180] is an error."""
    phi1, lambda1, phi2, lambda2 = (
        _degrees(lat1, 90.0), _degrees(lon1, 180.0), _degrees(lat2, 90.0), _degrees(lon2, 180.0)
    )  # fmt: skip
    a = math.sin((phi2 - phi1) / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin((lambda2 - lambda1) / 2) ** 2
    return numeric_literal(RANK_DOUBLE, 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a))))


def levenshtein(a, b) -> Literal:
    """The number of single code point insertions, deletions and substitutions turning ``a`` into ``b``."""
    first, second = string_value(a)[0], string_value(b)[0]
    if len(first) < len(second):
        first, second = second, first
    previous = list(range(len(second) + 1))
    for i, char in enumerate(first, 1):
        current = [i]
        for j, other in enumerate(second, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return integer_literal(previous[-1])


def _degrees(term, bound: float) -> float:
    value = float(numeric(term)[1])
    if not -bound <= value <= bound:  # NaN fails too
        raise ExpressionError
    return math.radians(value)


# --------------------------------------------------------------------------- helpers


def _iri(iri: str | NamedNode) -> str:
    name = iri.value if isinstance(iri, NamedNode) else iri
    try:
        NamedNode(name)
    except (TypeError, ValueError) as error:
        msg = f"an extension function is named by an absolute IRI, not {iri!r} ({error})"
        raise ValueError(msg) from None
    return name


def _arity(function: Callable[..., object]) -> tuple[int, int | None]:
    """The numbers of positional arguments ``function`` takes; any number when it cannot be read."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 0, None
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    low = sum(1 for p in positional if p.default is p.empty)
    variadic = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    return low, None if variadic else len(positional)


def _to_term(iri: str, result: object) -> NamedNode | BlankNode | Literal:
    kind = type(result)
    if kind is Literal or kind is NamedNode or kind is BlankNode:
        return result
    if result is None:
        raise ExpressionError
    if kind is bool:
        return boolean_literal(result)
    if kind is int:
        return integer_literal(result)
    if kind is float:
        return numeric_literal(RANK_DOUBLE, result)
    if kind is Decimal and result.is_finite():
        return Literal(format_decimal(result), datatype=DECIMAL)
    if kind is str:
        return Literal(result)
    _log_once(iri, f"returned {kind.__name__} {result!r}, which is not an RDF term")
    raise ExpressionError


def _log_once(iri: str, what: str) -> None:
    if iri not in _LOGGED:
        _LOGGED.add(iri)
        log.warning("extension function <%s> %s; its calls are expression errors (logged once)", iri, what)


def _pyoxigraph_entry(iri: str) -> Callable[..., object]:
    def entry(*args):
        try:
            return call_extension(iri, list(args))
        except ExpressionError:
            return None

    return entry


def _rebuild() -> None:
    _PYOXIGRAPH[0] = {NamedNode(name): _pyoxigraph_entry(name) for name in _REGISTRY}


_BUILT_INS = {HAVERSINE: haversine, LEVENSHTEIN: levenshtein, **geosparql.FUNCTIONS}
for _name, _function in _BUILT_INS.items():
    register_function(_name, _function)
