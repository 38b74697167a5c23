"""The abstract syntax tree of SPARQL 1.1 Query/Update plus the CQELS and RSP-QL extensions.

Shaped after the surface syntax (not yet the algebra): a ``GroupGraphPattern`` keeps its elements in
source order so the algebra translation can apply the spec's §18.2.2 rules (FILTER scope, BIND
ending a BGP, OPTIONAL/MINUS folding). Triple-pattern sugar (``;``, ``,``, ``[ … ]``, collections)
is expanded by the parser into plain ``TriplePattern``s with generated blank nodes.

Every node carries an optional ``span`` (see ``cqels_endpoint.terms.Node``) that never takes part
in equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as TypingLiteral

from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import WindowConfig
from cqels_endpoint.terms import IRI, BlankNode, Literal, Node, Var, VarOrTerm  # noqa: F401  (re-exported)

# --------------------------------------------------------------------------- property paths


@dataclass(frozen=True)
class PathInverse(Node):
    """``^path``"""

    path: Path


@dataclass(frozen=True)
class PathSequence(Node):
    """``a / b / …`` (two or more parts)"""

    parts: tuple[Path, ...]


@dataclass(frozen=True)
class PathAlternative(Node):
    """``a | b | …`` (two or more parts)"""

    parts: tuple[Path, ...]


@dataclass(frozen=True)
class PathMod(Node):
    """``path*``, ``path+`` or ``path?``"""

    path: Path
    modifier: TypingLiteral["*", "+", "?"]


@dataclass(frozen=True)
class PathNegatedSet(Node):
    """``!(a | ^b | …)``: forward IRIs and inverse IRIs kept apart, as the algebra needs them."""

    iris: tuple[IRI, ...]
    inverse_iris: tuple[IRI, ...] = ()


Path = IRI | PathInverse | PathSequence | PathAlternative | PathMod | PathNegatedSet

# --------------------------------------------------------------------------- triples


@dataclass(frozen=True)
class TriplePattern(Node):
    """One triple pattern; the predicate is a variable, an IRI or a property path.

    A path that is just an IRI (``:p``) is stored as the ``IRI`` itself; ``a`` is ``rdf:type``.
    """

    subject: VarOrTerm
    predicate: Var | Path
    object: VarOrTerm


@dataclass(frozen=True)
class QuadPattern(Node):
    """A triple in an Update's quad template; ``graph`` None is the default graph."""

    subject: VarOrTerm
    predicate: Var | IRI
    object: VarOrTerm
    graph: IRI | Var | None = None


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class BinaryOp(Node):
    """``||  &&  =  !=  <  >  <=  >=  +  -  *  /``"""

    op: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class UnaryOp(Node):
    """``!``, unary ``+``, unary ``-``"""

    op: str
    operand: Expression


@dataclass(frozen=True)
class In(Node):
    """``expr IN (…)`` or, with ``negated``, ``expr NOT IN (…)``"""

    expr: Expression
    values: tuple[Expression, ...]
    negated: bool = False


@dataclass(frozen=True)
class BuiltinCall(Node):
    """A built-in function by its upper-case SPARQL name (``STR``, ``REGEX``, ``BOUND``, ``IF``, …).

    ``BOUND``'s argument is a ``Var``; ``BNODE()``/``RAND()``/``NOW()``/``UUID()``/``STRUUID()`` have none.
    """

    name: str
    args: tuple[Expression, ...] = ()


@dataclass(frozen=True)
class FunctionCall(Node):
    """A call by IRI: an XSD cast (``xsd:integer(?x)``) or an extension function."""

    iri: IRI
    args: tuple[Expression, ...] = ()
    distinct: bool = False


@dataclass(frozen=True)
class Exists(Node):
    """``EXISTS { … }`` or, with ``negated``, ``NOT EXISTS { … }``"""

    pattern: GroupGraphPattern
    negated: bool = False


@dataclass(frozen=True)
class Aggregate(Node):
    """``COUNT SUM MIN MAX AVG SAMPLE GROUP_CONCAT`` and the extension ``MEDIAN``.

    ``expr`` None is ``COUNT(*)``; ``separator`` only for GROUP_CONCAT (None = the default ``" "``).
    """

    name: str
    expr: Expression | None
    distinct: bool = False
    separator: str | None = None


@dataclass(frozen=True)
class SeqStep(Node):
    """One argument of ``SEQ``: ``NOT? ?var quantifier? (AS ?alias)?``, the quantifier as
    ``minimum``..``maximum`` occurrences (``maximum`` None: unbounded; no quantifier: 1..1)."""

    var: Var
    negated: bool = False
    minimum: int = 1
    maximum: int | None = 1
    alias: Var | None = None


@dataclass(frozen=True)
class Seq(Node):
    """CQELS-QL 2.0 ``SEQ(step ; step ; …)``, a sequence of events (complex event processing)."""

    steps: tuple[SeqStep, ...]


Expression = (
    Var
    | IRI
    | Literal
    | BinaryOp
    | UnaryOp
    | In
    | BuiltinCall
    | FunctionCall
    | Exists
    | Aggregate
    | Seq
)


# --------------------------------------------------------------------------- graph patterns


@dataclass(frozen=True)
class TriplesBlock(Node):
    """Consecutive triple patterns of a group (a BGP, possibly with paths)."""

    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True)
class Filter(Node):
    constraint: Expression


@dataclass(frozen=True)
class Bind(Node):
    """``BIND (expr AS ?var)``"""

    expr: Expression
    var: Var


@dataclass(frozen=True)
class OptionalPattern(Node):
    pattern: GroupGraphPattern


@dataclass(frozen=True)
class MinusPattern(Node):
    pattern: GroupGraphPattern


@dataclass(frozen=True)
class UnionPattern(Node):
    """``{ … } UNION { … } UNION …`` (two or more alternatives)"""

    alternatives: tuple[GroupGraphPattern, ...]


@dataclass(frozen=True)
class GraphPattern(Node):
    """``GRAPH <g>|?g { … }``"""

    name: IRI | Var
    pattern: GroupGraphPattern


@dataclass(frozen=True)
class ServicePattern(Node):
    name: IRI | Var
    pattern: GroupGraphPattern
    silent: bool = False


@dataclass(frozen=True)
class InlineData(Node):
    """``VALUES``: ``rows`` hold one entry per variable, ``None`` for ``UNDEF``."""

    vars: tuple[Var, ...]
    rows: tuple[tuple[IRI | Literal | None, ...], ...]


@dataclass(frozen=True)
class SubSelect(Node):
    """A nested ``{ SELECT … }`` (no prologue, no dataset clause)."""

    query: SelectQuery


@dataclass(frozen=True)
class StreamPattern(Node):
    """CQELS ``STREAM <s> [window] { … }`` (either keyword order of the ISWC paper and later).

    ``pattern`` is a full group graph pattern, as in ``WindowPattern``: every triple pattern in it
    outside ``GRAPH`` and ``SERVICE`` (OPTIONAL, UNION and nested groups included) reads the window
    of ``stream``.
    """

    stream: IRI | Var
    window: WindowConfig
    pattern: GroupGraphPattern
    # CQELS-QL 2.0 ``STREAM Name { … }``: no window of its own, it reads the window of the query's
    # ``FROM STREAM Name [window]``, which then only declares that window (``algebra.translate``).
    declared: bool = False


@dataclass(frozen=True)
class WindowPattern(Node):
    """RSP-QL ``WINDOW <w> { … }`` naming a window declared by ``FROM NAMED WINDOW``."""

    name: IRI | Var
    pattern: GroupGraphPattern


@dataclass(frozen=True)
class GroupGraphPattern(Node):
    """``{ … }``: its elements in source order."""

    elements: tuple[GroupElement, ...] = ()


GroupElement = (
    TriplesBlock
    | Filter
    | Bind
    | OptionalPattern
    | MinusPattern
    | UnionPattern
    | GraphPattern
    | ServicePattern
    | InlineData
    | GroupGraphPattern
    | SubSelect
    | StreamPattern
    | WindowPattern
)


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class DatasetClause(Node):
    """``FROM <g>`` or ``FROM NAMED <g>``, with the CQELS-QL 2.0 options ``FROM [STATIC] <g> [WITH
    DEPTH n] [CACHE d]`` as written (``static`` is the STATIC keyword). The engine follows every hop
    the query's static patterns write (``depth`` bounds nothing further) and keeps static caches
    fresh by rebuilding them on each change, not by age (``cache_ms`` is recorded, not a timer):
    docs/ARCHITECTURE.md, "CQELS-QL 2.0 syntax"."""

    iri: IRI
    named: bool = False
    static: bool = False
    depth: int | None = None
    cache_ms: int | None = None


@dataclass(frozen=True)
class StreamDataset(Node):
    """C-SPARQL / CQELS 2 ``FROM STREAM <s> [RANGE d (STEP d)?]``: the window becomes the default graph."""

    stream: IRI
    window: WindowConfig


@dataclass(frozen=True)
class NamedWindow(Node):
    """RSP-QL ``FROM NAMED WINDOW <w> ON [STREAM] <s> [window]``"""

    name: IRI
    stream: IRI
    window: WindowConfig


Dataset = DatasetClause | StreamDataset | NamedWindow


@dataclass(frozen=True)
class Register(Node):
    """``REGISTER ISTREAM|RSTREAM|DSTREAM|QUERY <name>|name AS``: ``kind`` upper-case, ``name`` as written."""

    kind: TypingLiteral["ISTREAM", "RSTREAM", "DSTREAM", "QUERY"]
    name: IRI | str


@dataclass(frozen=True)
class ProjectionExpression(Node):
    """``(expr AS ?var)`` in a SELECT clause."""

    expr: Expression
    var: Var


@dataclass(frozen=True)
class GroupCondition(Node):
    """A GROUP BY key: an expression, optionally named ``(expr AS ?var)``; a bare ``?v`` is ``expr=Var``."""

    expr: Expression
    var: Var | None = None


@dataclass(frozen=True)
class OrderCondition(Node):
    expr: Expression
    descending: bool = False


@dataclass(frozen=True)
class Modifiers(Node):
    """GROUP BY, HAVING, ORDER BY, LIMIT and OFFSET (the SolutionModifier production)."""

    group_by: tuple[GroupCondition, ...] = ()
    having: tuple[Expression, ...] = ()
    order_by: tuple[OrderCondition, ...] = ()
    limit: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Prologue(Node):
    """``BASE`` and ``PREFIX`` declarations, kept for serialisation; IRIs in the tree are already resolved."""

    base: str | None = None
    prefixes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SelectQuery(Node):
    """``projection`` empty means ``SELECT *``."""

    projection: tuple[Var | ProjectionExpression, ...]
    where: GroupGraphPattern
    distinct: bool = False
    reduced: bool = False
    datasets: tuple[Dataset, ...] = ()
    modifiers: Modifiers = field(default_factory=Modifiers)
    values: InlineData | None = None


@dataclass(frozen=True)
class ConstructQuery(Node):
    """``template`` holds the CONSTRUCT template; for ``CONSTRUCT WHERE { … }`` it equals the WHERE triples
    and ``short_form`` is set."""

    template: tuple[TriplePattern, ...]
    where: GroupGraphPattern
    datasets: tuple[Dataset, ...] = ()
    modifiers: Modifiers = field(default_factory=Modifiers)
    values: InlineData | None = None
    short_form: bool = False


@dataclass(frozen=True)
class AskQuery(Node):
    where: GroupGraphPattern
    datasets: tuple[Dataset, ...] = ()
    modifiers: Modifiers = field(default_factory=Modifiers)
    values: InlineData | None = None


@dataclass(frozen=True)
class DescribeQuery(Node):
    """``targets`` empty means ``DESCRIBE *``; ``where`` None when there is no WHERE clause."""

    targets: tuple[Var | IRI, ...]
    where: GroupGraphPattern | None = None
    datasets: tuple[Dataset, ...] = ()
    modifiers: Modifiers = field(default_factory=Modifiers)
    values: InlineData | None = None


QueryForm = SelectQuery | ConstructQuery | AskQuery | DescribeQuery


@dataclass(frozen=True)
class Query(Node):
    """A parsed query: its form, prologue, optional REGISTER prefix and the source text."""

    form: QueryForm
    prologue: Prologue = field(default_factory=Prologue)
    register: Register | None = None
    text: str = field(default="", compare=False, repr=False)

    @property
    def is_continuous(self) -> bool:
        """Whether the query reads any stream (STREAM/WINDOW blocks or stream datasets)."""
        return mentions_streams(self)


_STREAM_NODES = (StreamPattern, WindowPattern, StreamDataset, NamedWindow)


def mentions_streams(node: object) -> bool:
    """Whether a query (or any part of one) reads a stream: STREAM, WINDOW or a stream dataset."""
    return any(isinstance(n, _STREAM_NODES) for n in walk(node))


# --------------------------------------------------------------------------- update


@dataclass(frozen=True)
class GraphTarget(Node):
    """A GraphRef/GraphRefAll/GraphOrDefault: an IRI or one of ``DEFAULT``, ``NAMED``, ``ALL``."""

    iri: IRI | None = None
    keyword: TypingLiteral["DEFAULT", "NAMED", "ALL"] | None = None


@dataclass(frozen=True)
class Load(Node):
    source: IRI
    into: IRI | None = None
    silent: bool = False


@dataclass(frozen=True)
class Clear(Node):
    target: GraphTarget
    silent: bool = False


@dataclass(frozen=True)
class Drop(Node):
    target: GraphTarget
    silent: bool = False


@dataclass(frozen=True)
class Create(Node):
    graph: IRI
    silent: bool = False


@dataclass(frozen=True)
class GraphTransfer(Node):
    """``ADD``, ``MOVE`` or ``COPY`` from one graph (or DEFAULT) to another."""

    op: TypingLiteral["ADD", "MOVE", "COPY"]
    source: GraphTarget
    destination: GraphTarget
    silent: bool = False


@dataclass(frozen=True)
class InsertData(Node):
    quads: tuple[QuadPattern, ...]


@dataclass(frozen=True)
class DeleteData(Node):
    quads: tuple[QuadPattern, ...]


@dataclass(frozen=True)
class DeleteWhere(Node):
    quads: tuple[QuadPattern, ...]


@dataclass(frozen=True)
class Modify(Node):
    """``WITH … DELETE {…} INSERT {…} USING … WHERE {…}``; ``using`` are (iri, named) pairs."""

    delete: tuple[QuadPattern, ...]
    insert: tuple[QuadPattern, ...]
    where: GroupGraphPattern
    with_graph: IRI | None = None
    using: tuple[DatasetClause, ...] = ()


UpdateOperation = Load | Clear | Drop | Create | GraphTransfer | InsertData | DeleteData | DeleteWhere | Modify


@dataclass(frozen=True)
class Update(Node):
    """A request of one or more operations; each keeps the prologue in force where it appeared."""

    operations: tuple[UpdateOperation, ...]
    prologues: tuple[Prologue, ...] = ()
    text: str = field(default="", compare=False, repr=False)

