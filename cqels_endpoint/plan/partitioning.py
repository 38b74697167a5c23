"""How a continuous query splits over the partitions of a Spark job (``cqels spark-job``).

``partitioning(query)`` cuts the algebra in two:

- the *global* chain at the top, evaluated once over the union of the partitions' results: the
  solution modifiers (``Slice``, ``Project``, ``Distinct``, ``Reduced``, ``OrderBy``) and, when the
  query aggregates, its ``Group`` with the ``Filter``/``Extend`` above it (HAVING, SELECT
  expressions). A group may draw solutions from several partitions, so the aggregates are merged
  globally; so are DISTINCT, ORDER BY … LIMIT and top-k, which compare solutions of every partition.
  When the key is a group key, though, every group lives in one partition: the ``Group`` (with
  HAVING and the SELECT expressions) is evaluated there, and the global chain is the modifiers.
- the *inner* pattern below it, evaluated per partition by the engine's incremental operators.

The inner pattern is evaluated per partition when a *key* variable exists: a variable that every
stream triple pattern mentions (``?trip`` in DEBS Q1) and that every solution of the inner pattern
binds from a stream triple. Each stream triple is then routed by the terms at the positions where
its stream's patterns hold the key, every solution is made of triples of one key value, and the
solutions of the partitions are disjoint: their union is the inner pattern's result. A partition
keeps only the solutions whose key value it owns (a triple routed by one position may match a
pattern holding the key at another). Static patterns are evaluated in every partition.

Without a key the whole query runs on one partition, and ``reason`` says why: no variable common
to every stream pattern, a window whose contents or schedule are global (count windows, above all
CQELS-QL 2.0's, which count every statement of the stream; periodic and directional windows:
their closes and anchors are set by the events of every key), CEP
``SEQ`` (a match spans events in stream order), a property path over a stream, or an inner
sub-query that slices, groups or projects the key away.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.variables import in_scope, mentioned, triple_vars
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import NowWindow, RangeWindow, stream_wide, window_extent
from cqels_endpoint.terms import IRI, Var

# The unary nodes a query's top may have that the global stage evaluates.
MODIFIERS = (n.Slice, n.Project, n.Distinct, n.Reduced, n.OrderBy)
# Row-wise nodes between a Group and the modifiers (HAVING, SELECT expressions).
ABOVE_GROUP = (n.Filter, n.Extend)


@dataclass(frozen=True)
class Partitioning:
    """The split of one query: ``top`` (outermost first, each node's ``input`` ignored) runs
    globally over the union of the partitions' ``inner`` results, whose columns are ``schema``.

    ``key`` is the partitioning variable (None: one partition, ``reason`` says why), ``positions``
    for each stream IRI the triple positions (0 subject, 1 predicate, 2 object) that route its
    triples."""

    key: Var | None
    positions: dict[str, tuple[int, ...]]
    top: tuple[n.Pattern, ...]
    inner: n.Pattern
    schema: tuple[Var, ...]
    reason: str

    @property
    def partitioned(self) -> bool:
        return self.key is not None

    def describe(self, partial: bool = False) -> list[str]:
        """The lines ``cqels explain`` prints about the split (``partial``: the job aggregates in
        part in the partitions where it can, ``split_aggregates``)."""
        if self.key is None:
            return [f"one partition: {self.reason}"]
        routes = ", ".join(f"<{stream}> by {'/'.join(_POSITION_NAMES[p] for p in positions)}" for stream, positions in self.positions.items())
        lines = [f"partitioned by {self.key} ({routes})"]
        if self.top:
            lines.append("global stage: " + " → ".join(_node_name(node) for node in self.top))
        if self.grouped:
            lines.append(f"per partition: the group by {self.key} (every group lives in one partition), and below it "
                         "the stream pattern, static joins and row filters")
        elif self.top and isinstance(self.top[-1], n.Group):
            split = split_aggregates(self)
            if isinstance(split, str):
                lines.append(f"the group over the solutions of every partition: {split}")
                lines.append("per partition: the stream pattern, static joins and row filters below it")
            elif not partial:
                lines.append(f"the group over the solutions of every partition; with --partial-aggregates, {split.describe()}")
                lines.append("per partition: the stream pattern, static joins and row filters below it")
            else:
                lines.append(split.describe())
                lines.append("per partition: the partial aggregates of the solutions it owns, and below them the stream "
                             "pattern, static joins and row filters")
        else:
            lines.append("per partition: the stream pattern, static joins and row filters below it")
        return lines

    @property
    def grouped(self) -> bool:
        """The partitions evaluate the query's group (the key is a group key)."""
        node = self.inner
        while isinstance(node, ABOVE_GROUP):
            node = node.input
        return self.key is not None and isinstance(node, n.Group)


_POSITION_NAMES = ("subject", "predicate", "object")


def _node_name(node: n.Pattern) -> str:
    if isinstance(node, n.Group):
        names = sorted({agg.name.upper() if isinstance(agg.name, str) else str(agg.name) for _, agg in node.aggregates})
        return f"group ({', '.join(names)})" if names else "group"
    return type(node).__name__.lower()


def split_modifiers(pattern: n.Pattern) -> tuple[tuple[n.Pattern, ...], n.Pattern]:
    """The solution modifiers at the top of ``pattern`` (outermost first) and the pattern below them."""
    chain: list[n.Pattern] = []
    node = pattern
    while isinstance(node, MODIFIERS):
        chain.append(node)
        node = node.input
    return tuple(chain), node


def split_top(pattern: n.Pattern) -> tuple[tuple[n.Pattern, ...], n.Pattern]:
    """The global chain of ``pattern`` (outermost first) and the pattern below it."""
    modifiers, node = split_modifiers(pattern)
    chain = list(modifiers)
    # HAVING/SELECT expressions are global only above a Group; without one they stay per partition.
    above: list[n.Pattern] = []
    probe = node
    while isinstance(probe, ABOVE_GROUP):
        above.append(probe)
        probe = probe.input
    if isinstance(probe, n.Group):
        chain.extend(above)
        chain.append(probe)
        node = probe.input
    return tuple(chain), node


def partitioning(query: n.AlgebraQuery) -> Partitioning:
    """The split of ``query`` (its translated, unoptimised algebra; see the module docstring)."""
    top, inner = split_top(query.pattern)
    group = top[-1] if top and isinstance(top[-1], n.Group) else None
    if group is not None:
        computed, inner = _computed_in_partitions(group, inner)
        top = (*top[:-1], computed)
    schema = _schema(top, inner)
    streams = [node for node in walk(query.pattern) if isinstance(node, n.StreamPattern)]

    def single(reason: str) -> Partitioning:
        return Partitioning(None, {}, (), query.pattern, tuple(in_scope(query.pattern)), reason)

    for stream in streams:
        window = window_extent(stream.window)
        if stream_wide(window):
            return single(f"the window of {stream.stream} holds the last statements of the whole stream (CQELS-QL 2.0's [TRIPLES n]), whatever their key")
        if not isinstance(window, (RangeWindow, NowWindow)) or (isinstance(window, RangeWindow) and window.periodic):
            return single(f"the window of {stream.stream} is not an eager time window (its contents or closes depend on the events of every key)")
    for node in walk(query.pattern):
        if isinstance(node, n.Seq):
            return single("a CEP SEQ match spans the events of every key in stream order")
        if isinstance(node, n.StreamPattern) and not isinstance(node.stream, IRI):
            return single("a stream named by a variable")
    if query.emit is not None:
        return single("an EMIT policy belongs to directional windows, whose anchors are global")
    triples = [(stream, triple) for stream in streams for triple in stream.triples]
    if not triples:
        return single("the query reads no stream triple pattern")
    if any(not isinstance(triple.predicate, (IRI, Var)) for _, triple in triples):
        return single("a property path over a stream follows triples of any key")
    common = set(triple_vars(triples[0][1]))
    for _, triple in triples[1:]:
        common &= set(triple_vars(triple))
    if not common:
        return single("no variable occurs in every stream triple pattern")
    inner_nodes = list(walk(inner))
    # A group key first (each group then lives in one partition), then the fewest routing positions.
    grouped = {expr for _, expr in group.keys if isinstance(expr, Var)} if group is not None else set()
    for candidate in sorted(common, key=lambda var: (var not in grouped, len(_positions(triples, var)), var.name)):
        if any(isinstance(node, (n.Group, n.Slice, n.Distinct, n.Reduced, n.OrderBy)) for node in inner_nodes):
            return single("a sub-query below the top groups, slices or removes duplicates over every key")
        if any(isinstance(node, n.Project) and candidate not in node.vars for node in inner_nodes):
            continue
        if any(isinstance(node, n.Extend) and node.var == candidate for node in inner_nodes):
            continue
        if not _keyed(inner, candidate):
            continue
        positions: dict[str, set[int]] = {}
        for stream, triple in triples:
            positions.setdefault(stream.stream.value, set()).update(_positions([(stream, triple)], candidate))
        fixed = {stream: tuple(sorted(found)) for stream, found in positions.items()}
        reason = f"every stream triple pattern mentions {candidate}"
        if group is not None and (candidate, candidate) in group.keys:
            # Each group lives in the partition that owns its key value: the group, HAVING and the
            # SELECT expressions are evaluated there, and their rows (which bind the key) merged.
            top, below = split_modifiers(query.pattern)
            return Partitioning(candidate, fixed, top, below, tuple(in_scope(below)), reason)
        key_schema = schema if candidate in schema else (*schema, candidate)
        return Partitioning(candidate, fixed, top, inner, key_schema, reason)
    names = ", ".join(sorted(str(var) for var in common))
    return single(f"no variable common to every stream pattern ({names}) is bound by a stream in every solution")


def _positions(triples, var: Var) -> set[int]:
    return {i for _, triple in triples for i, part in enumerate((triple.subject, triple.predicate, triple.object)) if part == var}


def _keyed(pattern: n.Pattern, key: Var) -> bool:
    """Every solution of ``pattern`` binds ``key`` from a stream triple."""
    match pattern:
        case n.StreamPattern():
            return True
        case n.Join(operands):
            return any(_keyed(operand, key) for operand in operands)
        case n.LeftJoin(left, _, _) | n.Minus(left, _):
            return _keyed(left, key)
        case n.Union(left, right):
            return _keyed(left, key) and _keyed(right, key)
        case n.Filter(_, inner) | n.Extend(_, _, inner) | n.Project(_, inner):
            return _keyed(inner, key)
        case n.Graph(_, inner):
            return _keyed(inner, key)
    return False


def _computed_in_partitions(group: n.Group, inner: n.Pattern) -> tuple[n.Group, n.Pattern]:
    """The group keys and aggregate arguments as columns the partitions compute (BIND below the
    cut: an expression in error leaves its column unbound, which groups and aggregates as the
    error itself does), and the Group over those columns that the global stage runs."""
    keys, aggregates = [], []
    for i, (var, expr) in enumerate(group.keys):
        if isinstance(expr, Var):
            keys.append((var, expr))
            continue
        column = Var(f".pk{i}")
        inner = n.Extend(column, expr, inner, span=group.span)
        keys.append((var, column))
    for i, (var, aggregate) in enumerate(group.aggregates):
        if aggregate.expr is None or isinstance(aggregate.expr, Var):
            aggregates.append((var, aggregate))
            continue
        column = Var(f".pa{i}")
        inner = n.Extend(column, aggregate.expr, inner, span=group.span)
        aggregates.append((var, replace(aggregate, expr=column)))
    return replace(group, keys=tuple(keys), aggregates=tuple(aggregates), input=inner), inner


def _schema(top: tuple[n.Pattern, ...], inner: n.Pattern) -> tuple[Var, ...]:
    """The columns the partitions hand to the global stage: the variables a Group reads, else
    every variable in scope below the modifiers."""
    group = top[-1] if top and isinstance(top[-1], n.Group) else None
    if group is None:
        return tuple(in_scope(inner))
    used = set()
    for _, expr in group.keys:
        used |= mentioned(expr)
    for _, aggregate in group.aggregates:
        used |= mentioned(aggregate)
    return tuple(var for var in in_scope(inner) if var in used)


# The aggregates whose partial results per partition merge into the aggregate of the union: the
# partial aggregate each partition evaluates and the one that merges the partials. SUM and AVG go
# through the engine's exact sum (``runtime.aggregates.EXACT_SUM``: a float or double sum rounded
# per partition would change answers), rounded once by the merge. GROUP_CONCAT and MEDIAN need the
# values themselves: those groups are aggregated globally from the solutions.
SPLIT_AS = {
    "COUNT": ("COUNT", "SUM"),
    "SUM": ("EXACT_SUM", "SUM_OF_EXACT"),
    "AVG": ("EXACT_SUM", "AVG_OF_EXACT"),
    "MIN": ("MIN", "MIN"),
    "MAX": ("MAX", "MAX"),
    "SAMPLE": ("SAMPLE", "SAMPLE"),
}


@dataclass(frozen=True)
class PartialAggregates:
    """A global ``Group`` split in two: each partition evaluates ``partial`` over the solutions it
    owns (its keys and aggregates as the columns ``schema``), the global stage ``merge`` over the
    partitions' partial rows; each node's ``input`` is set by its user. ``merge`` binds the
    original group's variables, so HAVING and the SELECT expressions above it are unchanged."""

    partial: n.Group
    merge: n.Group
    schema: tuple[Var, ...]
    names: tuple[str, ...]  # the query's aggregates, in order

    def describe(self) -> str:
        pairs = set()
        for name, (_, partial), (_, merged) in zip(self.names, self.partial.aggregates, self.merge.aggregates):
            if partial.name != name:
                pairs.add(f"{name} as {partial.name} → {merged.name}")
            else:
                pairs.add(name if merged.name == name else f"{name} → {merged.name}")
        return f"partial aggregates per partition, merged globally: {', '.join(sorted(pairs))}"


def split_aggregates(split: Partitioning) -> PartialAggregates | str:
    """The split of the global group of ``split`` into partial and merging aggregates, or why
    its group is aggregated globally from the solutions."""
    group = split.top[-1] if split.top and isinstance(split.top[-1], n.Group) else None
    if split.key is None or group is None:
        return "no group is aggregated globally"
    for _, aggregate in group.aggregates:
        name = aggregate.name
        if name not in SPLIT_AS:
            return f"{name} has no partial aggregate here"
        if aggregate.distinct and name in ("COUNT", "SUM", "AVG") and aggregate.expr != split.key:
            return f"a {name}(DISTINCT …) of anything but the key meets values of several partitions once"
        if not group.keys and name in ("MIN", "MAX"):
            # Without GROUP BY a partition without solutions has the one group too, whose MIN or
            # MAX is unbound: merged with the others it would make their error.
            return f"{name} without GROUP BY: a partition without solutions would leave it unbound"
    keys = tuple((Var(f".gk{i}"), expr) for i, (_, expr) in enumerate(group.keys))
    partials = tuple((Var(f".pp{i}"), replace(aggregate, name=SPLIT_AS[aggregate.name][0])) for i, (_, aggregate) in enumerate(group.aggregates))
    merging = tuple(
        (var, replace(aggregate, name=SPLIT_AS[aggregate.name][1], expr=column, distinct=False))
        for (var, aggregate), (column, _) in zip(group.aggregates, partials)
    )
    merge_keys = tuple((var, column) for (var, _), (column, _) in zip(group.keys, keys))
    partial = replace(group, keys=keys, aggregates=partials)
    merge = replace(group, keys=merge_keys, aggregates=merging)
    return PartialAggregates(partial, merge, tuple(var for var, _ in (*keys, *partials)), tuple(agg.name for _, agg in group.aggregates))
