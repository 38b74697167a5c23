"""What a Spark job runs for one continuous query: ``JobPlan``, made once on the driver and shipped
to every task (it is small and picklable: the query text and the numbers; each task derives the
algebra again, deterministically).

The partitions register ``partition_algebra``: the query below its global stage
(``plan.partitioning``), projected on the stage's input columns plus the key, as a SELECT whose
signed changes they hand on. The global stage evaluates ``global_algebra``: the top of the query
over a relation that the partitions' changes keep up to date (an ``InstanceTable`` read as a
cache, so the engine's own incremental operators do the aggregation, DISTINCT and top-k). A query
without a key runs whole on partition 0, with its own R2S, and the global stage orders its
emissions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.translate import to_algebra
from cqels_endpoint.config import DEFAULT_STREAM_BASE
from cqels_endpoint.engine.directional import query_r2s
from cqels_endpoint.errors import ArgumentError
from cqels_endpoint.plan.partitioning import PartialAggregates, Partitioning, partitioning, split_aggregates
from cqels_endpoint.plan.patterns import stream_triples
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.query.parser import parse_query
from cqels_endpoint.query.windows import NowWindow, RangeWindow, window_extent
from cqels_endpoint.terms import IRI


@dataclass(frozen=True)
class JobPlan:
    """One query as a Spark job: ``partitions`` tasks evaluate it (one when it has no key)."""

    text: str
    name: str
    r2s: R2S
    partitions: int
    lateness_ms: int = 0
    stream_base: str = DEFAULT_STREAM_BASE
    # The static graphs: the caches are built from them (on the driver by the Spark cache job, which
    # then ships the caches, not the graphs; in each partition when the plan carries no caches).
    static_nquads: str = field(default="", repr=False)
    # The static caches of ``partition_algebra`` built on the driver (streaming/caches.py), by cache key.
    caches: dict = field(default_factory=dict, repr=False, compare=False)
    # A global group whose aggregates merge (plan.partitioning.split_aggregates) is aggregated in
    # part by each partition; off by default: DEBS Q1 (one solution per event and group) hands the
    # global stage more rows so (benchmarks/results/spark_partials.md).
    partial_aggregates: bool = False
    dialect: str = "auto"  # what the query means (query.dialects)

    @cached_property
    def algebra(self) -> n.AlgebraQuery:
        return to_algebra(parse_query(self.text, stream_base=self.stream_base), dialect=self.dialect)

    @cached_property
    def split(self) -> Partitioning:
        return partitioning(self.algebra)

    @property
    def partitioned(self) -> bool:
        return self.split.partitioned and self.partitions > 1

    @property
    def tasks(self) -> int:
        """How many partitions receive events."""
        return self.partitions if self.partitioned else 1

    @cached_property
    def streams(self) -> frozenset[str] | None:
        """The streams the query reads (events of other streams do not concern it); None when a
        ``STREAM ?s`` may read any (the query then runs on one partition, whose engine routes them)."""
        patterns = stream_triples(self.algebra)
        if any(st.variable is not None for st in patterns):
            return None
        return frozenset(st.stream.value for st in patterns)

    @cached_property
    def horizon_ms(self) -> int | None:
        """How long an event can matter after its time: the longest RANGE (None: a window that
        holds events by count or for ever, so the partitions keep every event)."""
        longest = 0
        for st in stream_triples(self.algebra):
            window = window_extent(st.window)
            if isinstance(window, NowWindow):
                continue
            if not isinstance(window, RangeWindow):
                return None
            longest = max(longest, window.range_ms + (window.slide_ms or 0))
        return longest

    @cached_property
    def partition_algebra(self) -> n.AlgebraQuery:
        """What a partition registers: the whole query without a key; else the part below the
        global stage as a SELECT of ``split.schema``. Its LATENESS is the job's (the job releases
        events in time order)."""
        algebra = replace(self.algebra, lateness_ms=0)
        if not self.partitioned:
            return algebra
        inner = n.Project(self.split.schema, self.split.inner)
        return replace(algebra, form=QueryForm.SELECT, pattern=inner, template=(), register=None, emit=None)

    @cached_property
    def partial(self) -> PartialAggregates | None:
        """How the partitions aggregate in part (None: they hand on their solutions)."""
        if not (self.partitioned and self.partial_aggregates):
            return None
        found = split_aggregates(self.split)
        return found if isinstance(found, PartialAggregates) else None

    @cached_property
    def partial_algebra(self) -> n.AlgebraQuery:
        """A partition's partial aggregation, over the solutions it owns (the rows of an
        ``InstanceTable`` of ``split.schema``), as a SELECT of ``partial.schema``."""
        group = replace(self.partial.partial, input=n.StaticPattern(n.InstanceTable(self.split.schema, ())))
        pattern = n.Project(self.partial.schema, group)
        return replace(self.algebra, form=QueryForm.SELECT, pattern=pattern, template=(), register=None, emit=None, datasets=(), lateness_ms=0)

    @property
    def output_schema(self) -> tuple:
        """The columns of the rows the partitions hand the global stage."""
        return self.partial.schema if self.partial is not None else self.split.schema

    @cached_property
    def global_algebra(self) -> n.AlgebraQuery:
        """The global stage: the top of the query over the partitions' results as a cache."""
        node: n.Pattern = n.StaticPattern(n.InstanceTable(self.output_schema, ()))
        for top in reversed(self.split.top):
            merge = self.partial is not None and isinstance(top, n.Group)
            node = replace(self.partial.merge if merge else top, input=node)
        if not self.split.top:  # SELECT *: every variable in scope below, the key among them
            node = n.Project(self.split.schema, node)
        return replace(self.algebra, pattern=node, datasets=(), lateness_ms=0)

    @cached_property
    def ordered(self) -> bool:
        """The query orders its solutions (an emission's rows are a list, not a bag)."""
        node = self.algebra.pattern
        while isinstance(node, (n.Slice, n.Project, n.Distinct, n.Reduced)):
            node = node.input
        return isinstance(node, n.OrderBy)

    @property
    def key_column(self) -> int:
        return self.split.schema.index(self.split.key)


def job_plan(
    text: str,
    partitions: int,
    *,
    name: str | None = None,
    r2s: str | None = None,
    lateness_ms: int | None = None,
    stream_base: str = DEFAULT_STREAM_BASE,
    static_nquads: str = "",
    partial_aggregates: bool = False,
    dialect: str = "auto",
) -> JobPlan:
    """The plan of ``text`` on ``partitions`` partitions; ``r2s``/``name``/``lateness_ms`` default
    to the query's REGISTER clause (else the engine's default R2S, ``directional.query_r2s``, and
    ``q1``) and its LATENESS."""
    if partitions < 1:
        msg = f"partitions must be ≥ 1, not {partitions}"
        raise ArgumentError(msg)
    algebra = to_algebra(parse_query(text, stream_base=stream_base), dialect=dialect)
    register = algebra.register
    r2s_kind = query_r2s(r2s, algebra, stream_triples(algebra))
    if name is None:
        name = "q1" if register is None else register.name.value if isinstance(register.name, IRI) else str(register.name)
    lateness = algebra.lateness_ms if lateness_ms is None else lateness_ms
    if lateness < 0:
        msg = f"lateness must be ≥ 0 ms, not {lateness}"
        raise ArgumentError(msg)
    return JobPlan(text, name, r2s_kind, partitions, lateness, stream_base, static_nquads,
                   partial_aggregates=partial_aggregates, dialect=dialect)
