"""The logical plan: the SPARQL 1.1 algebra of spec §18.2 plus the stream nodes of CQELS.

Nodes are frozen dataclasses (``cqels_endpoint.terms.Node``): hashable, compared without their
source ``span``, which they inherit from the AST node they were translated from so that later
stages can point at the query text. Expressions stay AST expressions (``cqels_endpoint.query.ast``)
except that ``EXISTS`` carries its *translated* pattern (``Exists`` below) and aggregates are
replaced by the internal variables ``?.0``, ``?.1``, … that ``Group`` binds.

Conventions shared by every pass:

- ``BGP(())`` is the spec's empty pattern Z (one empty solution), printed ``(bgp)``.
- ``Join`` is n-ary (two or more operands); translation builds binary joins as the spec does and
  ``passes.flatten_joins`` merges nested ones. Joins of solution multisets are associative and
  commutative, so the operand order is a presentation choice only.
- Filters and left-join conditions hold a tuple of expressions meaning their conjunction (the
  spec's ``Filter(C, G)`` with C the conjunction of a group's FILTERs).
- Stream patterns never take the ``GRAPH`` context: a ``StreamPattern`` under a ``Graph`` node
  still matches its own window, whatever the active graph.
- Variables whose name is not a legal SPARQL variable name (``?.0`` for aggregates, ``??P0`` for
  the fresh variables of property-path sequences) are internal: never projected by ``SELECT *``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cqels_endpoint.errors import Span
from cqels_endpoint.query import ast
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.query.windows import WindowConfig
from cqels_endpoint.terms import IRI, Literal, Node, Var

# --------------------------------------------------------------------------- graph patterns


@dataclass(frozen=True)
class BGP(Node):
    """A basic graph pattern: triple patterns whose predicates are IRIs or variables."""

    triples: tuple[ast.TriplePattern, ...] = ()


@dataclass(frozen=True)
class Path(Node):
    """``Path(X, P, Y)`` of §18.2.2.4 for a property path that does not reduce to triples.

    ``path`` uses the AST path nodes in the spec's normal form: a ``PathNegatedSet`` only ever has
    forward IRIs (``!(^:a)`` is ``PathInverse(PathNegatedSet((:a,)))``).
    """

    subject: ast.VarOrTerm
    path: ast.Path
    object: ast.VarOrTerm


@dataclass(frozen=True)
class Join(Node):
    """The join of two or more patterns."""

    operands: tuple[Pattern, ...]


@dataclass(frozen=True)
class LeftJoin(Node):
    """``LeftJoin(left, right, expr)``: OPTIONAL, ``exprs`` the conjunction of its group's FILTERs."""

    left: Pattern
    right: Pattern
    exprs: tuple[Expression, ...] = ()


@dataclass(frozen=True)
class Filter(Node):
    """Keeps the solutions of ``input`` for which every expression of ``exprs`` is true."""

    exprs: tuple[Expression, ...]
    input: Pattern


@dataclass(frozen=True)
class Union(Node):
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Graph(Node):
    """``GRAPH name { pattern }`` over the static named graphs."""

    name: IRI | Var
    pattern: Pattern


@dataclass(frozen=True)
class Extend(Node):
    """``BIND(expr AS var)``, a SELECT expression, or the naming of an aggregate result."""

    var: Var
    expr: Expression
    input: Pattern


@dataclass(frozen=True)
class Minus(Node):
    left: Pattern
    right: Pattern


@dataclass(frozen=True)
class Group(Node):
    """Grouping and aggregation in one node, as Jena's ``OpGroup`` (spec §18.2.4.1).

    ``keys`` are ``(var, expr)`` pairs: ``GROUP BY ?x`` is ``(?x, ?x)``, ``GROUP BY (e AS ?v)`` is
    ``(?v, e)``, an unnamed ``GROUP BY e`` is ``(None, e)``. Each solution of the output binds the
    named keys and one internal variable per aggregate; ``Extend``/``Filter``/``OrderBy`` above it
    read those variables where the query wrote the aggregate.
    """

    keys: tuple[tuple[Var | None, Expression], ...]
    aggregates: tuple[tuple[Var, ast.Aggregate], ...]
    input: Pattern


@dataclass(frozen=True)
class Table(Node):
    """Inline data (``VALUES``): ``rows`` hold one entry per variable, ``None`` for UNDEF.

    ``Table((), ((),))`` is the unit table (one empty solution).
    """

    vars: tuple[Var, ...]
    rows: tuple[tuple[IRI | Literal | None, ...], ...]


@dataclass(frozen=True)
class InstanceTable(Table):
    """The instances of a stored template evaluated by one plan (``engine.instances``): a
    ``VALUES`` of the template's parameters with the internal column ``?.instance`` first. Its rows
    are set by the instance group while the plan runs, never computed from the store, so the static
    split keeps it a cache of its own."""


INSTANCE = Var(".instance")


@dataclass(frozen=True)
class ParameterTable(Table):
    """A template's parameters (``algebra.parameters``), first in its WHERE: no rows until an
    instance binds them (one row of its terms) or an instance group takes them (an ``InstanceTable``)."""


@dataclass(frozen=True)
class Service(Node):
    name: IRI | Var
    pattern: Pattern
    silent: bool = False


@dataclass(frozen=True)
class Project(Node):
    vars: tuple[Var, ...]
    input: Pattern


@dataclass(frozen=True)
class Distinct(Node):
    input: Pattern


@dataclass(frozen=True)
class Reduced(Node):
    input: Pattern


@dataclass(frozen=True)
class OrderBy(Node):
    """``conditions`` are AST order conditions whose expressions are algebra expressions."""

    conditions: tuple[ast.OrderCondition, ...]
    input: Pattern


@dataclass(frozen=True)
class Slice(Node):
    """OFFSET ``start``, LIMIT ``length`` (None: no limit)."""

    start: int
    length: int | None
    input: Pattern


# --------------------------------------------------------------------------- stream nodes


@dataclass(frozen=True)
class StreamPattern(Node):
    """Triple patterns matched against one stream window: the leaf of every continuous query.

    Comes from a CQELS ``STREAM`` block, from the BGPs of an RSP-QL ``WINDOW`` block
    (``window_name`` set; ``stream``/``window`` from its ``FROM NAMED WINDOW``), or from a
    default-graph BGP of a query with ``FROM STREAM``. The window applies to each triple pattern.
    """

    stream: IRI | Var
    window: WindowConfig
    triples: tuple[ast.TriplePattern, ...]
    window_name: IRI | None = None


@dataclass(frozen=True)
class SeqStep(Node):
    """One step of a ``SEQ``: its variable, whether it is *bound* (one event, bound in the result)
    or a *gap* step (``low``..``high`` events between its bound neighbours, ``high`` None: no
    bound), its event patterns (the group's stream triple patterns whose subject is ``var``), its
    per-event FILTERs (which decide which solutions of those patterns are its events) and, for a
    gap step, its *gap guards*: the FILTER conjuncts over its variables and bound steps', which
    decide which of its events count for the gap of a match."""

    var: Var
    bound: bool
    low: int
    high: int | None
    patterns: tuple[StreamPattern, ...]
    filters: tuple[Expression, ...] = ()
    guards: tuple[Expression, ...] = ()


@dataclass(frozen=True)
class Seq(Node):
    """``FILTER(SEQ(step ; …))`` with the event patterns of its steps (docs/ARCHITECTURE.md,
    "Complex event processing"): one solution per match, binding the variables of the bound steps'
    event patterns; ``guards`` are the FILTERs over several bound steps, evaluated on each match.
    The rest of its group is joined with it as usual."""

    steps: tuple[SeqStep, ...]
    guards: tuple[Expression, ...] = ()


def event_vars(step: SeqStep) -> tuple[Var, ...]:
    """The variables of a SEQ step's event patterns, in order of appearance (the step's own first)."""
    found: dict[Var, None] = {}
    for pattern in step.patterns:
        for triple in pattern.triples:
            for term in (triple.subject, triple.predicate, triple.object):
                if isinstance(term, Var):
                    found.setdefault(term)
    return tuple(found)


@dataclass(frozen=True)
class StaticPattern(Node):
    """A maximal sub-pattern without streams: materialised once per query as a cached mapping.

    ``join_vars`` are the variables it shares with the rest of the query (the patterns it is
    joined or compared with), in the order they appear in ``pattern``: the keys the cache is
    indexed on. Produced only by ``passes.split_static``.
    """

    pattern: Pattern
    join_vars: tuple[Var, ...] = ()


Pattern = (
    BGP
    | Path
    | Join
    | LeftJoin
    | Filter
    | Union
    | Graph
    | Extend
    | Minus
    | Group
    | Table
    | Service
    | Project
    | Distinct
    | Reduced
    | OrderBy
    | Slice
    | StreamPattern
    | Seq
    | StaticPattern
)

PATTERN_TYPES = (
    BGP,
    Path,
    Join,
    LeftJoin,
    Filter,
    Union,
    Graph,
    Extend,
    Minus,
    Group,
    Table,
    Service,
    Project,
    Distinct,
    Reduced,
    OrderBy,
    Slice,
    StreamPattern,
    Seq,
    StaticPattern,
)

# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Exists(Node):
    """``EXISTS``/``NOT EXISTS`` with the translated pattern, evaluated per solution by substitution."""

    pattern: Pattern
    negated: bool = False


Expression = (
    Var
    | IRI
    | Literal
    | ast.BinaryOp
    | ast.UnaryOp
    | ast.In
    | ast.BuiltinCall
    | ast.FunctionCall
    | Exists
)

# --------------------------------------------------------------------------- the query


@dataclass(frozen=True)
class AlgebraQuery(Node):
    """A translated query: its form, the algebra of its WHERE clause and what the form needs.

    ``template`` is the CONSTRUCT template; ``describe`` the DESCRIBE targets (``DESCRIBE *``
    already expanded to the in-scope variables); ``datasets`` the dataset clauses as parsed
    (FROM, FROM NAMED, FROM STREAM, FROM NAMED WINDOW); ``base`` the BASE declaration, which the
    ``IRI()`` function resolves against. ``prefixes`` (for printing) and ``source`` (for error
    messages) do not take part in equality.
    """

    form: QueryForm
    pattern: Pattern
    template: tuple[ast.TriplePattern, ...] = ()
    describe: tuple[Var | IRI, ...] = ()
    datasets: tuple[ast.Dataset, ...] = ()
    register: ast.Register | None = None
    base: str | None = None
    # CQELS-QL 2.0 window policy: ``EMIT`` of its directional windows (upper-case, None: ON_CLOSE
    # for a directional query) and the largest ``LATENESS`` of its windows, in ms.
    emit: str | None = None
    lateness_ms: int = 0
    # What the query's constructs mean (query.dialects): "cqels" or "cqels2", resolved at translation.
    dialect: str = "cqels"
    prefixes: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        # The form compares by identity downstream; a caller may give its name.
        object.__setattr__(self, "form", QueryForm(self.form))


def is_internal(var: Var) -> bool:
    """Whether ``var`` was made by the translation (aggregate results, path sequence links)."""
    return var.name[:1] in (".", "?")


EMPTY = BGP(())
"""The spec's empty pattern Z: one solution that binds nothing."""


def cover(nodes) -> Span | None:
    """The smallest span holding the spans of ``nodes`` (None when none has one)."""
    spans = [node.span for node in nodes if node.span is not None]
    if not spans:
        return None
    span = spans[0]
    for other in spans[1:]:
        span = span.cover(other)
    return span
