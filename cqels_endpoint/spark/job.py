"""``SparkCacheEngine``: the mappings of a static sub-pattern computed as a Spark DataFrame job.

The snapshot (``export``) is a table of int64 quads and a dictionary. Every solution column is an
int64 term id (null: unbound). The algebra maps onto DataFrame operations:

- a triple pattern is a filter of the quad table on its constants, its graph, and the equality of a
  variable written twice in it; a BGP joins its triple patterns on their shared variables;
- ``Join`` is a join on the shared variables: an equi-join where both sides bind a variable in every
  row (``algebra.variables.certainly_bound``), else the SPARQL compatibility test ``l = r OR l IS
  NULL OR r IS NULL`` and the coalesced value (Spark runs that as a nested-loop join);
- ``LeftJoin`` is a left outer join with the OPTIONAL's filter in the join condition; when the
  filter needs a Python UDF (which Spark refuses in an outer join condition) the inner join is
  filtered and the left rows without a surviving partner are added back (anti join on a row id);
- ``Union`` is a union by column name (a column one side lacks is null); ``Distinct`` ``distinct()``;
  ``Project`` a select; ``Table`` a DataFrame of the encoded VALUES rows;
- ``Graph <iri>`` restricts the quads to that graph; ``Graph ?g`` carries the graph id in a hidden
  column through the inner pattern (joins match on it) and then binds ``?g`` to it;
- ``FILTER``/``BIND`` are Spark column expressions where they are exact on term ids — ``BOUND``,
  ``sameTerm``, ``=``/``!=`` with an IRI operand (IRIs are equal only to themselves), ``&&``, ``||``,
  ``!`` of those (Spark's null logic is SPARQL's error logic), a variable or a constant — and
  otherwise a Python UDF that decodes the ids (dictionary join for the N-Triples text, inline ids
  decoded in place) and runs ``runtime.expressions`` on the terms. New terms a BIND makes are
  collected to the driver and given ids in the snapshot dictionary.

Anything else (property paths, MINUS, GROUP/aggregates, ORDER BY/LIMIT, REDUCED, SERVICE, EXISTS,
RAND/NOW/UUID/STRUUID/BNODE) makes the whole cache evaluated by pyoxigraph on the driver
(``caches.engines.compute_cache``), and ``notes`` says which construct did.

The result reaches the driver in one of two ways. With ``parquet_rows`` set, the result is
persisted (computed once) and its rows counted up to ``parquet_rows + 1`` on the executors: at most
``parquet_rows`` are collected and decoded as a list; more are written, sorted by their ids
(``caches.delta.term_key``), as Parquet under ``data_dir/spark-caches`` with the terms they use,
and the build's rows are a ``caches.engines.ParquetRows`` read back in parts, so the driver never
holds the result. Without ``parquet_rows``, every row is collected (one job fewer).
"""

from __future__ import annotations

import itertools
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from cqels_endpoint.algebra import nodes as n
from cqels_endpoint.algebra.sexpr import to_sexpr
from cqels_endpoint.algebra.variables import certainly_bound
from cqels_endpoint.caches.engines import (
    CACHE_ENGINES,
    CacheBuild,
    CacheEngine,
    LocalCacheEngine,
    ParquetRows,
    StaticSource,
    compute_cache,
)
from cqels_endpoint.config import DEFAULT_SPARK_PARQUET_ROWS
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.plan.nodes import StaticCache
from cqels_endpoint.query import ast
from cqels_endpoint.query.visit import walk
from cqels_endpoint.runtime.functions import CASTS
from cqels_endpoint.runtime.functions.extensions import as_at_import
from cqels_endpoint.runtime.untracked import untrack_row
from cqels_endpoint.spark.export import DEFAULT_GRAPH, Snapshot, export_snapshot, parse_term, work_directory
from cqels_endpoint.spark.session import SparkSessionHolder
from cqels_endpoint.terms import IRI, BlankNode, Literal, Var

log = logging.getLogger("cqels_endpoint.caches")

_NONDETERMINISTIC = frozenset({"RAND", "NOW", "UUID", "STRUUID", "BNODE"})


class Unsupported(Exception):
    """A construct the Spark translation does not express exactly (the cache goes to pyoxigraph)."""


@dataclass
class Relation:
    """A DataFrame of solutions: ``columns`` maps each variable (or hidden graph column) to its
    DataFrame column; ``certain`` are the variables bound in every row."""

    df: object
    columns: dict[str, str]
    certain: frozenset[str]


# Rows above which a build is written as Parquet rather than collected (``SparkCacheEngine``);
# ``cqels serve --spark-parquet-rows`` has the same default.
PARQUET_ROWS = DEFAULT_SPARK_PARQUET_ROWS


class SparkCacheEngine:
    """Builds a static cache with Spark (see the module docstring); ``data_dir`` holds the snapshots
    and the Parquet builds (a temporary directory without it); a result of more than
    ``parquet_rows`` rows is read back from Parquet in parts (None: always collected)."""

    name = "spark"

    def __init__(
        self,
        session_holder: SparkSessionHolder,
        data_dir: str | Path | None = None,
        timeout_s: float = 300.0,
        parquet_rows: int | None = PARQUET_ROWS,
    ):
        if parquet_rows is not None and parquet_rows < 0:
            msg = f"parquet_rows must be ≥ 0 or None, not {parquet_rows}"
            raise ValueError(msg)
        self.session_holder = session_holder
        self.data_dir = data_dir
        self.timeout_s = timeout_s
        self.parquet_rows = parquet_rows

    def build(self, cache: StaticCache, query: n.AlgebraQuery, static: StaticSource) -> CacheBuild:
        try:
            _check_supported(cache.pattern)
        except Unsupported as reason:
            return CacheBuild(compute_cache(cache, static), self.name, (f"evaluated by pyoxigraph on the driver: {reason}",))
        spark = self.session_holder.get(self.timeout_s)
        started = time.perf_counter()
        snapshot = export_snapshot(static, cache.pattern, query, self.data_dir)
        try:
            translator = _Translator(spark, snapshot, query.base)
            relation = translator.pattern(cache.pattern, None)
            result = translator.select(relation, cache.schema)
            if self.parquet_rows is None or not cache.schema:
                rows = translator.decode(result.collect())
            else:
                rows = self._collect_or_write(translator, result)
        finally:
            snapshot.close()
        log.debug("spark cache %s: %d rows in %.3f s", cache.id, len(rows), time.perf_counter() - started)
        notes = (f"Spark job over {snapshot.quad_count} quads", *tuple(dict.fromkeys(translator.notes)))
        if isinstance(rows, ParquetRows):
            notes = (*notes, f"{len(rows)} rows read back from Parquet in parts (over {self.parquet_rows})")
        return CacheBuild(rows, self.name, notes)

    def _collect_or_write(self, translator: _Translator, result) -> list[tuple] | ParquetRows:
        """The rows as a list when there are at most ``parquet_rows``, else as Parquet (module docstring)."""
        from pyspark import StorageLevel

        result = result.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # Counted on the executors: deciding holds no row on the driver.
            if result.limit(self.parquet_rows + 1).count() <= self.parquet_rows:
                return translator.decode(result.collect())
            directory = work_directory(self.data_dir, "spark-caches", "cache")
            try:
                return translator.write(result, directory)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise
        finally:
            result.unpersist()

    def close(self) -> None:
        """Stops the Spark session if this engine's holder created it (``caches.cache_engine("spark")``);
        a wrapped or shared session belongs to its creator and keeps running."""
        self.session_holder.stop()


def _check_supported(pattern: n.Pattern) -> None:
    """Raise ``Unsupported`` naming the first construct the translation cannot express exactly,
    or why the sub-pattern is not worth a Spark job."""
    for node in walk(pattern):
        match node:
            case n.Path():
                raise Unsupported("property path")
            case n.Minus():
                raise Unsupported("MINUS")
            case n.Group():
                raise Unsupported("GROUP BY / aggregate")
            case n.OrderBy() | n.Slice():
                raise Unsupported("ORDER BY / LIMIT / OFFSET")
            case n.Reduced():
                raise Unsupported("REDUCED")
            case n.Service():
                raise Unsupported("SERVICE")
            case n.Exists():
                raise Unsupported("EXISTS")
            case n.StreamPattern() | n.StaticPattern():
                raise Unsupported(type(node).__name__)
            case ast.BuiltinCall(name) if name in _NONDETERMINISTIC:
                raise Unsupported(f"{name}()")
            case ast.FunctionCall(iri) if iri.value not in CASTS and not as_at_import(iri.value):
                # Spark's Python workers know the built-in functions only, not this process's registrations.
                raise Unsupported(f"<{iri.value}>(), a function registered in this process")
    if not any(isinstance(node, n.BGP) for node in walk(pattern)):
        # Inline data only (the VALUES row of each instance of a stored query): no graph to
        # scan, and a job per instance would cost seconds each.
        raise Unsupported("no triple pattern to distribute")


class _Translator:
    """Turns one sub-pattern into a DataFrame over one snapshot."""

    def __init__(self, spark, snapshot: Snapshot, base_iri: str | None):
        from pyspark.sql import functions as F

        self.F = F
        self.spark = spark
        self.snapshot = snapshot
        self.dictionary = snapshot.dictionary
        self.base_iri = base_iri
        self.quads = spark.read.parquet(str(snapshot.quads_path))
        self.dict_df = spark.read.parquet(str(snapshot.dictionary_path))
        self._dict_synced = len(self.dictionary)  # serials already in dict_df
        self._names = itertools.count()
        self.notes: list[str] = []

    # ------------------------------------------------------------------ helpers

    def _fresh(self, prefix: str = "c") -> str:
        return f"{prefix}{next(self._names)}"

    def _encode(self, term) -> int:
        return self.dictionary.encode(constant_term(term))

    def _long(self, value):
        return self.F.lit(value).cast("long")

    def _empty(self, variables: tuple[str, ...], graph) -> Relation:
        names = {v: self._fresh() for v in variables}
        if isinstance(graph, str):
            names[graph] = self._fresh("g")
        df = self.spark.range(0).select(*(self._long(None).alias(c) for c in names.values()))
        return Relation(df, names, frozenset(names))

    def _unit(self, graph) -> Relation:
        """One empty solution; inside ``GRAPH ?g`` one per named graph."""
        if isinstance(graph, str):
            return self._named_graphs(graph)
        return Relation(self.spark.range(1).select(), {}, frozenset())

    def _named_graphs(self, key: str) -> Relation:
        from pyspark.sql.types import LongType, StructField, StructType

        column = self._fresh("g")
        rows = [(g,) for g in self.snapshot.named_graph_ids]
        df = self.spark.createDataFrame(rows, StructType([StructField(column, LongType(), False)]))
        return Relation(df, {key: column}, frozenset((key,)))

    def _sync_dictionary(self) -> None:
        """Append the terms the driver encoded since the last sync (VALUES, constants, BIND results)
        to the dictionary DataFrame the UDFs decode with."""
        if self._dict_synced == len(self.dictionary):
            return
        ids, texts = self.dictionary.entries(self._dict_synced + 1)
        extra = self.spark.createDataFrame(list(zip(ids, texts, strict=True)), "id long, term string")
        self.dict_df = self.dict_df.unionByName(extra)
        self._dict_synced = len(self.dictionary)

    # ------------------------------------------------------------------ patterns

    def pattern(self, pattern: n.Pattern, graph) -> Relation:
        """``graph``: None (the default graph), an int (a named graph's id, -1 if absent), or the key
        of the hidden column holding the graph of an enclosing ``GRAPH ?g``."""
        match pattern:
            case n.BGP(triples):
                return self._bgp(triples, graph)
            case n.Join(operands):
                result = self.pattern(operands[0], graph)
                for operand in operands[1:]:
                    result = self._join(result, self.pattern(operand, graph))
                return result
            case n.LeftJoin(left, right, exprs):
                return self._left_join(self.pattern(left, graph), self.pattern(right, graph), exprs)
            case n.Union(left, right):
                return self._union(self.pattern(left, graph), self.pattern(right, graph))
            case n.Filter(exprs, inner):
                return self._filter(self.pattern(inner, graph), exprs)
            case n.Extend(var, expr, inner):
                return self._extend(self.pattern(inner, graph), var.name, expr)
            case n.Graph(name, inner):
                return self._graph(name, inner, graph)
            case n.Table(variables, rows):
                return self._table(variables, rows, graph)
            case n.Project(variables, inner):
                return self._project(self.pattern(inner, graph), [v.name for v in variables], graph)
            case n.Distinct(inner):
                relation = self.pattern(inner, graph)
                return Relation(relation.df.distinct(), relation.columns, relation.certain)
        raise Unsupported(type(pattern).__name__)

    def _bgp(self, triples, graph) -> Relation:
        if not triples:
            return self._unit(graph)
        result = None
        for triple in triples:
            relation = self._triple(triple, graph)
            result = relation if result is None else self._join(result, relation)
        return result

    def _triple(self, triple: ast.TriplePattern, graph) -> Relation:
        F = self.F
        df = self.quads
        if graph is None:
            df = df.where(F.col("g") == DEFAULT_GRAPH)
        elif isinstance(graph, int):
            df = df.where(F.col("g") == graph)
        else:
            df = df.where(F.col("g") != DEFAULT_GRAPH)
        first: dict[str, str] = {}  # variable → the position it was first seen at
        for position, term in zip("spo", (triple.subject, triple.predicate, triple.object), strict=True):
            if isinstance(term, (Var, BlankNode)):
                # Blank nodes of a pattern are variables that are never projected.
                key = term.name if isinstance(term, Var) else f"_:{term.label}"
                if key in first:
                    df = df.where(F.col(position) == F.col(first[key]))
                else:
                    first[key] = position
            elif isinstance(term, (IRI, Literal)):
                term_id = self.dictionary.lookup(constant_term(term))
                if term_id is None:
                    return self._empty(tuple(first) + _triple_vars(triple, len(first)), graph)
                df = df.where(F.col(position) == term_id)
            else:
                raise Unsupported("property path")
        columns = {key: self._fresh() for key in first}
        selected = [F.col(position).alias(columns[key]) for key, position in first.items()]
        if isinstance(graph, str):
            columns[graph] = self._fresh("g")
            selected.append(F.col("g").alias(columns[graph]))
        return Relation(df.select(*selected), columns, frozenset(columns))

    def _graph(self, name, inner: n.Pattern, outer) -> Relation:
        if isinstance(name, IRI):
            term_id = self.dictionary.lookup(constant_term(name))
            relation = self.pattern(inner, -1 if term_id is None else term_id)
        else:
            key = f"graph {next(self._names)}"
            relation = self.pattern(inner, key)
            relation = self._bind_graph(relation, key, name.name)
        if isinstance(outer, str):
            # GRAPH inside GRAPH ?g: the inner graph does not depend on the outer one, which
            # still ranges over every named graph.
            relation = self._join(relation, self._named_graphs(outer))
        return relation

    def _bind_graph(self, relation: Relation, key: str, var: str) -> Relation:
        """Bind ``?var`` to the hidden graph column ``key`` (compatible with an inner ``?var``)."""
        F = self.F
        columns = dict(relation.columns)
        hidden = columns.pop(key)
        if var not in columns:
            columns[var] = hidden
            return Relation(relation.df, columns, relation.certain - {key} | {var})
        own = columns[var]
        df = relation.df.where((F.col(own) == F.col(hidden)) | F.col(own).isNull())
        df = df.withColumn(own, F.col(hidden)).drop(hidden)
        return Relation(df, columns, relation.certain - {key} | {var})

    def _table(self, variables, rows, graph) -> Relation:
        from pyspark.sql.types import LongType, StructField, StructType

        names = {v.name: self._fresh() for v in variables}
        encoded = [tuple(None if t is None else self._encode(t) for t in row) for row in rows]
        schema = StructType([StructField(c, LongType(), True) for c in names.values()])
        df = self.spark.createDataFrame(encoded, schema)
        certain = frozenset(v.name for v in certainly_bound(n.Table(variables, rows)))
        relation = Relation(df, names, certain)
        if isinstance(graph, str):
            relation = self._join(relation, self._named_graphs(graph))
        return relation

    def _project(self, relation: Relation, variables: list[str], graph) -> Relation:
        keep = list(variables) + ([graph] if isinstance(graph, str) else [])
        columns = {}
        selected = []
        for key in keep:
            if key in relation.columns:
                columns[key] = relation.columns[key]
                selected.append(self.F.col(columns[key]))
        return Relation(relation.df.select(*selected), columns, relation.certain & frozenset(keep))

    # ------------------------------------------------------------------ joins

    def _join(self, left: Relation, right: Relation, how: str = "inner", condition=None) -> Relation:
        """The SPARQL join of two relations (``how="left"``: the LeftJoin without filter, or with
        ``condition(resolve)`` an exact Spark condition over the merged solution)."""
        F = self.F
        shared = [k for k in left.columns if k in right.columns]
        renamed = {k: self._fresh("r") for k in shared}
        right_df = right.df
        for key in shared:
            right_df = right_df.withColumnRenamed(right.columns[key], renamed[key])
        tests = []
        for key in shared:
            lcol, rcol = F.col(left.columns[key]), F.col(renamed[key])
            if key in left.certain and key in right.certain:
                tests.append(lcol == rcol)
            else:
                # SPARQL compatibility: an unbound side is compatible with anything.
                tests.append((lcol == rcol) | lcol.isNull() | rcol.isNull())
        merged = {
            key: F.coalesce(F.col(left.columns[key]), F.col(renamed[key])) if key in shared else F.col(column)
            for key, column in {**left.columns, **right.columns}.items()
        }
        if condition is not None:
            tests.append(condition(merged))
        if tests:
            joined = left.df.join(right_df, _conjunction(tests), how)
        elif how == "inner":
            joined = left.df.crossJoin(right_df)
        else:
            joined = left.df.join(right_df, F.lit(True), how)
        columns = {key: self._fresh() for key in merged}
        df = joined.select(*(merged[key].alias(columns[key]) for key in merged))
        certain = left.certain | right.certain if how == "inner" else left.certain
        return Relation(df, columns, certain)

    def _left_join(self, left: Relation, right: Relation, exprs) -> Relation:
        if not exprs:
            return self._join(left, right, "left")
        exact = [self._exact(e) for e in exprs]
        if all(e is not None for e in exact):
            self.notes.append("OPTIONAL filter as a Spark join condition")
            return self._join(left, right, "left", lambda resolve: _conjunction([e(resolve) for e in exact]))
        # A UDF cannot sit in an outer join's condition: filter the inner join, then add back the
        # left rows that kept no partner. The row id is pinned by a checkpoint so both uses agree.
        F = self.F
        row_id = self._fresh("id")
        left_df = left.df.withColumn(row_id, F.monotonically_increasing_id()).localCheckpoint()
        numbered = Relation(left_df, {**left.columns, row_id: row_id}, left.certain | {row_id})
        matched = self._filter(self._join(numbered, right), exprs)
        kept = matched.df.select(F.col(matched.columns[row_id]).alias(row_id)).distinct()
        unmatched = Relation(left_df.join(kept, row_id, "left_anti"), numbered.columns, numbered.certain)
        result = self._union(matched, unmatched)
        columns = dict(result.columns)
        hidden = columns.pop(row_id)
        return Relation(result.df.drop(hidden), columns, left.certain)

    def _union(self, left: Relation, right: Relation) -> Relation:
        F = self.F
        keys = list(dict.fromkeys([*left.columns, *right.columns]))
        columns = {key: self._fresh() for key in keys}

        def aligned(relation: Relation):
            return relation.df.select(
                *(
                    (F.col(relation.columns[k]) if k in relation.columns else self._long(None)).alias(columns[k])
                    for k in keys
                )
            )

        return Relation(aligned(left).unionByName(aligned(right)), columns, left.certain & right.certain)

    # ------------------------------------------------------------------ expressions

    def _filter(self, relation: Relation, exprs) -> Relation:
        df = relation.df
        resolve = {k: self.F.col(c) for k, c in relation.columns.items()}
        pending = []
        for expr in exprs:
            exact = self._exact(expr)
            if exact is None:
                pending.append(expr)
            else:
                self.notes.append(f"FILTER {_show(expr)} as a Spark expression")
                df = df.where(exact(resolve))
        relation = Relation(df, relation.columns, relation.certain)
        if pending:
            self.notes.append(f"FILTER {' && '.join(_show(e) for e in pending)} by a Python UDF")
            relation = self._with_udf(relation, tuple(pending), "filter")
        return relation

    def _extend(self, relation: Relation, var: str, expr) -> Relation:
        F = self.F
        column = self._fresh()
        columns = {**relation.columns, var: column}
        if isinstance(expr, Var):
            source = relation.columns.get(expr.name)
            value = self._long(None) if source is None else F.col(source)
            return Relation(relation.df.withColumn(column, value), columns, relation.certain)
        if isinstance(expr, (IRI, Literal)):
            df = relation.df.withColumn(column, self._long(self._encode(expr)))
            return Relation(df, columns, relation.certain)
        self.notes.append(f"BIND {_show(expr)} by a Python UDF")
        return self._with_udf(relation, expr, "bind", var)

    def _exact(self, expr):
        """``resolve -> Column`` computing ``expr`` exactly on term ids (null = error), or None."""
        F = self.F
        match expr:
            case ast.BinaryOp("&&" | "||" as op, left, right):
                parts = (self._exact(left), self._exact(right))
                if None in parts:
                    return None
                a, b = parts
                return (lambda r: a(r) & b(r)) if op == "&&" else (lambda r: a(r) | b(r))
            case ast.UnaryOp("!", operand):
                inner = self._exact(operand)
                return None if inner is None else (lambda r: ~inner(r))
            case ast.BuiltinCall("BOUND", (Var(name),)):
                return lambda r: r[name].isNotNull() if name in r else F.lit(False)
            case ast.BuiltinCall("SAMETERM", (a, b)) if _is_operand(a) and _is_operand(b):
                return self._term_equality(a, b, "=")
            case ast.BinaryOp("=" | "!=" as op, a, b) if _is_operand(a) and _is_operand(b) and (
                isinstance(a, IRI) or isinstance(b, IRI)
            ):
                # An IRI is RDF-term-equal to itself only, and "!=" to anything else (no error).
                return self._term_equality(a, b, op)
        return None

    def _term_equality(self, a, b, op: str):
        ids = {term: self._encode(term) for term in (a, b) if not isinstance(term, Var)}

        def operand(term, resolve):
            if isinstance(term, Var):
                return resolve.get(term.name, self._long(None))  # unbound: an error (null)
            return self._long(ids[term])

        if op == "=":
            return lambda r: operand(a, r) == operand(b, r)
        return lambda r: operand(a, r) != operand(b, r)

    def _with_udf(self, relation: Relation, exprs, kind: str, target: str | None = None) -> Relation:
        """Evaluate ``exprs`` (a filter's conjunction, or the expression of BIND ``target``) with
        ``runtime.expressions`` in a Python UDF over the decoded terms of the variables they read."""
        from pyspark.sql.types import BooleanType, StringType

        F = self.F
        self._sync_dictionary()
        parts = exprs if isinstance(exprs, tuple) else (exprs,)
        variables = sorted(
            {v.name for e in parts for v in walk(e) if isinstance(v, Var) and v.name in relation.columns}
        )
        df = relation.df
        texts = []
        for var in variables:
            # The N-Triples text of each dictionary id; inline ids are decoded in the UDF itself.
            text = self._fresh("t")
            lookup = self.dict_df.select(F.col("id").alias(text + "_id"), F.col("term").alias(text))
            df = df.join(lookup, F.col(relation.columns[var]) == F.col(text + "_id"), "left").drop(text + "_id")
            texts.append(text)
        inputs = [F.col(relation.columns[v]) for v in variables] + [F.col(t) for t in texts]
        names = tuple(variables)
        base_iri = self.base_iri
        if kind == "filter":
            function = F.udf(lambda *values: _run_filter(exprs, base_iri, names, values), BooleanType())
            df = df.where(function(*inputs)).drop(*texts)
            return Relation(df, relation.columns, relation.certain)
        function = F.udf(lambda *values: _run_bind(exprs, base_iri, names, values), StringType())
        result_text = self._fresh("t")
        df = df.withColumn(result_text, function(*inputs)).drop(*texts)
        df = df.localCheckpoint()  # evaluated once: the new terms and the rows must agree
        mapping = self._encode_texts(df, result_text)
        column = self._fresh()
        df = df.join(mapping, F.col(result_text) == F.col(mapping.columns[0]), "left")
        df = df.select(*(F.col(c) for c in relation.columns.values()), F.col(mapping.columns[1]).alias(column))
        return Relation(df, {**relation.columns, target: column}, relation.certain)

    def _encode_texts(self, df, text_column: str):
        """A DataFrame (text, id) for the distinct non-null texts of ``text_column``: dictionary ids
        for known terms, new ids (given on the driver) for the others."""
        F = self.F
        texts = df.select(F.col(text_column).alias("text")).where(F.col("text").isNotNull()).distinct()
        known = texts.join(self.dict_df, F.col("text") == F.col("term")).select("text", "id")
        unknown = texts.join(self.dict_df, F.col("text") == F.col("term"), "left_anti").collect()
        fresh = [(row.text, self.dictionary.encode(parse_term(row.text))) for row in unknown]
        self._sync_dictionary()
        mapping = known.unionByName(self.spark.createDataFrame(fresh, "text string, id long"))
        text_alias, id_alias = self._fresh("m"), self._fresh("m")
        return mapping.select(F.col("text").alias(text_alias), F.col("id").alias(id_alias))

    # ------------------------------------------------------------------ results

    def select(self, relation: Relation, schema: tuple[str, ...]):
        """The DataFrame of ``relation``'s term ids aligned with ``schema``: columns ``o0``, ``o1``…"""
        F = self.F
        selected = [
            (F.col(relation.columns[v]) if v in relation.columns else self._long(None)).alias(f"o{i}")
            for i, v in enumerate(schema)
        ]
        return relation.df.select(*selected)

    def decode(self, collected) -> list[tuple]:
        """Collected rows of ids as pyoxigraph terms (a bag)."""
        decode = self.dictionary.decode
        # Untracked as in caches.engines.compute_cache: the rows of a cache are long-lived.
        return [untrack_row(tuple(None if value is None else decode(value) for value in row)) for row in collected]

    def write(self, result, directory: Path) -> ParquetRows:
        """``result`` (from ``select``) as ``ParquetRows`` in ``directory``: the rows sorted by their
        ids, nulls first (``caches.delta.row_key``), and the dictionary terms they use."""
        F = self.F
        self._sync_dictionary()  # the terms a BIND made
        result.orderBy(*(F.col(c).asc_nulls_first() for c in result.columns)).write.parquet(str(directory / "rows"))
        used = None
        for column in result.columns:
            ids = result.select(F.col(column).alias("id")).where(F.col("id") > 0)
            used = ids if used is None else used.union(ids)
        used.distinct().join(self.dict_df, "id").select("id", "term").write.parquet(str(directory / "terms"))
        return ParquetRows(directory, len(result.columns), sorted_by_key=self.dictionary.stable)


def _conjunction(tests):
    result = tests[0]
    for test in tests[1:]:
        result = result & test
    return result


def _is_operand(term) -> bool:
    return isinstance(term, (Var, IRI, Literal))


def _triple_vars(triple: ast.TriplePattern, skip: int) -> tuple[str, ...]:
    """The variables of ``triple`` after the first ``skip`` distinct ones (for an empty result)."""
    keys = []
    for term in (triple.subject, triple.predicate, triple.object):
        if isinstance(term, Var):
            keys.append(term.name)
        elif isinstance(term, BlankNode):
            keys.append(f"_:{term.label}")
    return tuple(dict.fromkeys(keys))[skip:]


def _show(expr) -> str:
    return to_sexpr(expr)


# ---------------------------------------------------------------------- UDF bodies (run on workers)

_COMPILED: dict[tuple, object] = {}


def _compiled(kind: str, exprs, base_iri: str | None):
    """The compiled expression, once per worker process (closures are compiled where they run)."""
    key = (kind, exprs, base_iri)
    function = _COMPILED.get(key)
    if function is None:
        from cqels_endpoint.runtime.expressions import compile_expression, compile_filter

        if kind == "filter":
            function = compile_filter(exprs, base_iri=base_iri)
        else:
            function = compile_expression(exprs, base_iri=base_iri)
        _COMPILED[key] = function
    return function


def _decoded_row(names: tuple[str, ...], values: tuple) -> dict:
    from cqels_endpoint.runtime.encoding import decode_inline

    count = len(names)
    row = {}
    for name, term_id, text in zip(names, values[:count], values[count:], strict=True):
        if term_id is not None:
            row[name] = decode_inline(term_id) if term_id < 0 else parse_term(text)
    return row


def _run_filter(exprs, base_iri, names, values) -> bool:
    return _compiled("filter", exprs, base_iri)(_decoded_row(names, values))


def _run_bind(expr, base_iri, names, values) -> str | None:
    from cqels_endpoint.runtime.functions import ExpressionError

    try:
        return str(_compiled("bind", expr, base_iri)(_decoded_row(names, values)))
    except ExpressionError:
        return None


def cache_engine(
    name: str,
    spark_master: str | None = None,
    *,
    start: bool = True,
    data_dir: str | Path | None = None,
    parquet_rows: int | None = PARQUET_ROWS,
) -> CacheEngine:
    """The cache engine called ``name`` ("local" or "spark"); ``spark_master``, ``data_dir`` and
    ``parquet_rows`` only for Spark (``SparkCacheEngine``; the master else ``CQELS_SPARK_MASTER``,
    else ``local[*]``). Raises ``ValueError`` for another name.

    ``start`` begins starting the SparkSession in the background at once; without it the session
    starts with ``engine.session_holder.start()`` or the first build (the server starts it when it
    starts serving, not whenever an app object is made)."""
    if name == "local":
        return LocalCacheEngine()
    if name == "spark":
        engine = SparkCacheEngine(SparkSessionHolder(master=spark_master), data_dir, parquet_rows=parquet_rows)
        if start:  # after SparkCacheEngine checked parquet_rows: a refused one starts no JVM
            engine.session_holder.start()
        return engine
    msg = f"cache engine must be one of {', '.join(CACHE_ENGINES)}, not {name!r}"
    raise ValueError(msg)
