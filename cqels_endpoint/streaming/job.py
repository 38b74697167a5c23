"""``run_job``: one continuous query as a Spark Structured Streaming query (``cqels spark-job``).

The streaming query has three steps (docs/SCALING.md draws them):

1. **Route** (``mapInPandas``): each input line of the event directory becomes one event
   (``streaming.events``), ordered by ``(time, file name, line number)`` (files are read whole,
   each by one task in order, which numbers their lines);
   its triples are split between the partitions by the key, and every partition gets a row for
   every event — a tick when its share is empty. A line that is not an event is kept as a
   ``rejected`` output line; events of streams the query does not read are left out.
2. **Partitions** (``transformWithStateInPandas`` grouped by partition): ``stages.PartitionRunner``.
   The state of a partition is the events still inside its windows (and those held for
   lateness), its clock and the job's first event time. The event-time watermark is Spark's
   (``withWatermark`` on the events' time, the lateness as its delay, read in ``EventTime``
   mode): the latest time of the earlier micro-batches minus the lateness, one for all the
   query's streams, kept with the checkpoint. An event older than it is refused (a ``late``
   output line; Spark drops nothing itself, since the watermarked column does not reach the
   partitions), an event newer than the watermark this batch will leave is held in state until
   a later batch passes it; the rest enter in time order. The static caches come with the plan,
   or, when large, as the partition's initial state: the rows it needs (``streaming.caches``),
   kept in its state. A live runner is kept in the Python worker between micro-batches (matched
   to the state by a version number); any other task rebuilds it from the state.
3. **Global stage** (``transformWithStateInPandas`` on one key): ``stages.GlobalMerger``, whose
   state is the relation of the partitions' results. Its output lines go to the sink.

Sinks: ``file`` (Spark's exactly-once file sink: text files of JSON lines, committed with the
checkpoint; ``committed_lines`` reads them in order), ``console`` (printed by the driver) and
``post`` (a CONSTRUCT query's triples pushed to a ``cqels serve`` stream). A job restarted on the
same checkpoint goes on from the last committed micro-batch: Spark replays the uncommitted one
against the committed state, so no emission is lost or written twice in the file sink.
"""

from __future__ import annotations

import json
import logging
import pickle
import time as _time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cqels_endpoint.caches.engines import ParquetRows
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.errors import ArgumentError, SparkUnavailableError
from cqels_endpoint.query.kinds import QueryForm
from cqels_endpoint.runtime.encoding import decode_inline
from cqels_endpoint.spark.session import build_session, resolve_master, spark_running
from cqels_endpoint.streaming.caches import build_caches, shard_rows
from cqels_endpoint.streaming.follow import Follower, static_source
from cqels_endpoint.streaming.plan import JobPlan, job_plan
from cqels_endpoint.streaming.stages import (
    Event,
    GlobalMerger,
    GlobalState,
    Output,
    PartitionRunner,
    PartitionState,
    Routed,
    global_step,
    partition_step,
    route_changes,
    route_lines,
    static_store,
)

log = logging.getLogger("cqels_endpoint.streaming")

SINKS = ("file", "console", "post")
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_ROUTED = "part long, time long, file string, line long, stream string, data string, kind string"
_OUTPUT = "time long, file string, line long, kind string, payload string"
_EVENT = "time long, file string, line long, stream string, data string, pending boolean"
_PARTITION_META = "version long, clock long, origin long"
_GLOBAL_META = "version long, time long"
_RELATION = "row string, count long"
# The caches a job ships with its plan, at most (pickled): the partitions' processor must stay below
# spark.broadcast.UDFCompressionThreshold (1 MiB), since the Python runner of transformWithStateInPandas
# cannot load a broadcast command (PySpark 4.3: BROADCAST_VARIABLE_NOT_LOADED). Larger caches are joined.
SHIPPED_CACHE_BYTES = 256 * 1024
# A cache of more rows is left in the cache job's Parquet, never collected on the driver.
INLINE_CACHE_ROWS = 10_000
# A row of a large cache on its way to a partition (null: the cache's mark, sent to every partition).
_SHARD = "part long, cache string, row string"
_CACHE_ROW = "cache string, row string"
# Arrow holds a string column of at most 2 GiB in one array, and PySpark's conversion of a pandas
# UDF's output needs one array per column: a larger frame fails deep in Spark ("Cannot convert
# pyarrow.lib.ChunkedArray to pyarrow.lib.Array"; a two-stream join's changes reach that in one
# micro-batch). Every step hands on its rows in frames of at most this much text, and Spark's Arrow
# batches into a step are cut at the same size.
FRAME_BYTES = 64 << 20
_JOB_CONF = (
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.shuffle.partitions",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.streaming.noDataMicroBatches.enabled",
    "spark.sql.execution.arrow.maxBytesPerBatch",
)

# The live stages of this Python worker, by job: {partition or "global": (state version, stage)}.
_LIVE: dict[str, dict] = {}


@dataclass
class JobReport:
    """What a finished run of a job did: ``batches`` the progress records of its micro-batches
    (``StreamingQueryProgress`` as JSON), ``emissions`` the lines its sink received."""

    plan: dict
    batches: list[dict] = field(default_factory=list)
    wall_seconds: float = 0.0
    emissions: int = 0

    @property
    def input_rows(self) -> int:
        return sum(batch.get("numInputRows", 0) for batch in self.batches)


def describe(plan: JobPlan) -> dict:
    """The split of a job's query as ``explain`` and the report give it."""
    split = plan.split
    lines = split.describe(plan.partial_aggregates) if plan.partitioned or not split.partitioned else ["one partition: --partitions 1"]
    return {
        "partitions": plan.tasks,
        "key": str(split.key) if plan.partitioned else None,
        "routes": {stream: list(positions) for stream, positions in split.positions.items()} if plan.partitioned else {},
        "explain": lines,
    }


def run_job(
    query: str,
    events: str | Path,
    *,
    output: str | Path | None = None,
    sink: str = "file",
    post_url: str | None = None,
    master: str | None = None,
    partitions: int | None = None,
    checkpoint: str | Path | None = None,
    static: Sequence[str | Path] = (),
    session=None,
    max_files_per_trigger: int | None = None,
    lateness_ms: int | None = None,
    r2s: str | None = None,
    name: str | None = None,
    default_stream: str | None = None,
    until_done: bool = True,
    trigger_ms: int | None = None,
    kafka: tuple[str, str] | None = None,
    inline_cache_rows: int | None = INLINE_CACHE_ROWS,
    static_endpoint: str | None = None,
    follow_interval_s: float = 1.0,
    partial_aggregates: bool = False,
    dialect: str = "auto",
) -> JobReport:
    """Runs ``query`` over the event files in ``events`` (see the module docstring).

    ``until_done``: stop once every file present has been processed (else run until interrupted,
    picking up new files). ``session``: an existing SparkSession (else one on ``master``, default
    ``CQELS_SPARK_MASTER`` or ``local[*]``). ``partitions`` defaults to Spark's default
    parallelism; ``checkpoint`` to a fresh directory (no restart). ``static``: RDF files loaded as
    the static data (their named graphs kept; triples go to the default graph), from which the Spark
    cache job builds the caches the partitions read.
    ``kafka``: ``(bootstrap servers, topic)`` to read the events from a Kafka topic instead (each
    record's value one line; the cluster needs Spark's Kafka connector, docs/SCALING.md), from its
    earliest offsets; ``events`` is then ignored. ``inline_cache_rows``: a static cache of more
    rows never reaches the driver: it is joined as a DataFrame, each partition getting the rows it
    needs (``streaming.caches``; None: every cache collected). The collected ones are shipped with
    the plan while they fit ``SHIPPED_CACHE_BYTES``, and joined from the driver's rows otherwise.
    ``static_endpoint``: the URL of a ``cqels serve`` whose store is the static data (instead of
    ``static``). A job that runs until interrupted (``until_done`` false) follows its static data,
    every ``follow_interval_s`` seconds (``streaming.follow``): every cache is then collected on the
    driver, which hands the partitions each change. ``partial_aggregates``: a global group whose
    aggregates merge is aggregated in part by the partitions (``JobPlan.partial``; else from the
    solutions, globally). ``dialect``: what the query means (``query.dialects``), as on ``Engine``.
    """
    if inline_cache_rows is not None and inline_cache_rows < 0:
        msg = f"inline_cache_rows must be ≥ 0 or None, not {inline_cache_rows}"
        raise ArgumentError(msg)
    if sink not in SINKS:
        msg = f"sink must be one of {', '.join(SINKS)}, not {sink!r}"
        raise ArgumentError(msg)
    if sink == "file" and output is None:
        raise ArgumentError("the file sink needs an output directory (--output)")
    if sink == "post" and not post_url:
        raise ArgumentError("the post sink needs the URL of a cqels serve stream (--post-to)")
    events_dir = Path(events) if events is not None else None
    if kafka is None and (events_dir is None or not events_dir.is_dir()):
        msg = f"the events directory {events_dir} does not exist"
        raise ArgumentError(msg)
    source = static_source(static, static_endpoint)
    # Every error a registration gives (syntax, plan, a bad argument), before Spark starts.
    _check_runnable(job_plan(query, 1, name=name, r2s=r2s, lateness_ms=lateness_ms, dialect=dialect), sink)
    following = source is not None and not until_done
    if following and checkpoint is None:
        raise ArgumentError("following the static data needs a --checkpoint: the job keeps its caches' changes there")
    static_text = source.nquads() if source is not None and not following else ""
    # A session this call starts is its to stop; one already running in this process is not.
    owned = session is None and not spark_running()
    if session is None:
        session = build_session(resolve_master(master), "cqels-spark-job")
    try:
        if partitions is None:
            partitions = session.sparkContext.defaultParallelism
        plan = job_plan(query, partitions, name=name, r2s=r2s, lateness_ms=lateness_ms, static_nquads=static_text,
                        partial_aggregates=partial_aggregates, dialect=dialect)
        large: dict = {}
        checkpoint = Path(checkpoint) if checkpoint is not None else Path(f"/tmp/cqels-spark-job-{uuid.uuid4().hex}")
        follower = None
        if following:
            def collect(nquads: str) -> dict:
                return build_caches(plan.partition_algebra, plan.text, static_store(replace(plan, static_nquads=nquads)), session, None)[0]

            follower = Follower(source, checkpoint / "static", collect, follow_interval_s)
            shipped, large = _within_budget(follower.base, {})
            plan = replace(plan, caches=shipped, static_nquads="")
        elif static_text:
            shipped, large = _within_budget(*build_caches(plan.partition_algebra, plan.text, static_store(plan), session, inline_cache_rows))
            # A partition's engine reads static data through its caches alone: the graphs stay here.
            plan = replace(plan, caches=shipped, static_nquads="")
        job_id = str(checkpoint.resolve())
        report = JobReport(describe(plan) | {"caches": {"shipped": len(plan.caches), "joined": len(large)}})
        # The streaming query runs on a copy of the session's configuration taken when it starts:
        # what the job sets is put back once it has started, for the session's other users.
        saved = {key: session.conf.get(key, None) for key in _JOB_CONF}
        from pyspark.sql import functions as sf

        try:
            lines = _kafka_lines(session, *kafka) if kafka is not None else _file_lines(session, events_dir, max_files_per_trigger)
            lines = lines.withColumn("static", sf.lit(False))
            if follower is not None:
                changes = _file_lines(session, follower.changes, None).withColumn("static", sf.lit(True))
                lines = lines.unionByName(changes, allowMissingColumns=True)
            initial = _cache_shards(session, plan, large) if large else None
            streaming = _start(session, plan, lines, initial, output, sink, post_url, checkpoint, job_id, default_stream, trigger_ms)
        finally:
            for key, value in saved.items():
                if value is None:
                    session.conf.unset(key)
                else:
                    session.conf.set(key, value)
        started = _time.perf_counter()
        if until_done:
            streaming.processAllAvailable()
            streaming.stop()
        else:
            if follower is not None:
                follower.start()
            try:
                streaming.awaitTermination()
            finally:
                if follower is not None:
                    follower.stop()
        report.wall_seconds = _time.perf_counter() - started
        report.batches = [json.loads(progress.json) for progress in streaming.recentProgress]
        if streaming.exception() is not None:
            raise RuntimeError(f"the Spark job failed: {streaming.exception()}")
    finally:
        if owned:
            session.stop()
    if sink == "file":
        report.emissions = len(committed_lines(output))
    return report


def _within_budget(shipped: dict, large: dict) -> tuple[dict, dict]:
    """The collected caches to ship (the smallest, up to ``SHIPPED_CACHE_BYTES`` in all) and the
    caches to join as DataFrames (the others, with ``large``)."""
    sizes = sorted((len(pickle.dumps(rows)), key) for key, rows in shipped.items())
    kept, total = {}, 0
    for size, key in sizes:
        if total + size > SHIPPED_CACHE_BYTES:
            large = {**large, key: shipped[key]}
            continue
        kept[key], total = shipped[key], total + size
    return kept, large


def _check_runnable(plan: JobPlan, sink: str) -> None:
    engine = Engine()
    try:
        engine.check(plan.text, r2s=plan.r2s, dialect=plan.dialect)
    finally:
        engine.close()
    split = replace(plan, partitions=2)
    if split.partitioned:
        # The plans of the split itself (partition, partial aggregation, global stage), compiled
        # here: what the operators cannot run is refused now, not in a task deep in Spark.
        PartitionRunner(split, 0, 0).close()
        GlobalMerger(split)
    if sink == "post" and plan.algebra.form != QueryForm.CONSTRUCT:
        raise ArgumentError("--post-to pushes triples into a stream: it needs a CONSTRUCT query")


def _file_lines(session, events_dir: Path, max_files: int | None):
    """The lines of the files in ``events_dir``: ``value`` and the ``file`` name."""
    from pyspark.sql import functions as sf

    # Files are read whole, each by one task, which numbers their lines (_Router).
    session.conf.set("spark.sql.files.maxPartitionBytes", str(1 << 40))
    reader = session.readStream.format("text")
    if max_files is not None:
        reader = reader.option("maxFilesPerTrigger", max_files)
    return reader.load(str(events_dir)).select("value", sf.col("_metadata.file_name").alias("file"))


def _kafka_lines(session, servers: str, topic: str):
    """The records of a Kafka topic as lines: ``value``, ``file`` (topic-partition) and ``line`` (offset + 1)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as sf

    try:
        records = (
            session.readStream.format("kafka")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
        )
    except AnalysisException as error:
        msg = (
            f"Spark cannot read Kafka here ({error.getMessage().splitlines()[0]}): the cluster needs the Kafka connector, "
            "e.g. spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version> (docs/SCALING.md)"
        )
        raise SparkUnavailableError(msg) from None
    return records.select(
        sf.col("value").cast("string").alias("value"),
        sf.concat_ws("-", sf.col("topic"), sf.col("partition").cast("string")).alias("file"),
        (sf.col("offset") + 1).alias("line"),
    )


def _cache_shards(session, plan: JobPlan, large: dict):
    """The large caches' rows as a DataFrame of ``_SHARD``: each row (N-Triples forms) for every
    partition that needs it, and a mark of each cache for every partition (whose shard may be
    empty). A cache the Spark cache job left in Parquet is read there, its term ids joined with
    their terms (inline ids, which have none, decoded by the sharder); one the driver holds (too
    large to ship) becomes a DataFrame of its rows."""
    from pyspark.sql import functions as sf

    frame = session.createDataFrame([(part, json.dumps(key), None) for key in large for part in range(plan.tasks)], _SHARD)
    for key, rows in large.items():
        width = len(key[1])
        columns = ", ".join(f"id{i} string, term{i} string" for i in range(width))
        if isinstance(rows, ParquetRows):
            texts = session.read.parquet(str(rows.directory / "rows"))
            terms = session.read.parquet(str(rows.directory / "terms"))
            for i, column in enumerate(list(texts.columns)):
                named = terms.select(sf.col("id").alias(f"known{i}"), sf.col("term").alias(f"term{i}"))
                texts = texts.join(named, texts[column] == named[f"known{i}"], "left").drop(f"known{i}")
                texts = texts.withColumn(f"id{i}", sf.col(column).cast("string")).drop(column)
            texts = texts.select(*(name for i in range(width) for name in (f"id{i}", f"term{i}")))
        else:
            texts = session.createDataFrame([[value for text in row for value in (None, text)] for row in rows], columns)
        frame = frame.unionByName(texts.mapInPandas(_Sharder(plan, key, width), _SHARD))
    return frame


class _Sharder:
    """The rows of one large cache as ``(partition, cache, row)`` for every partition each goes to
    (``streaming.caches.shard_rows``). A value comes as its term id (a string: a 64-bit id has no
    exact float) and its N-Triples text, the text missing for an inline id, which decodes alone."""

    def __init__(self, plan: JobPlan, key: tuple, width: int):
        self.plan, self.key, self.width = plan, key, width
        self.name = json.dumps(key)
        self.frame_bytes = FRAME_BYTES

    def __call__(self, frames):
        for frame in frames:
            rows = [tuple(_text(values[2 * i], values[2 * i + 1]) for i in range(self.width)) for values in frame.itertuples(index=False, name=None)]
            shares = [(part, self.name, json.dumps(row, ensure_ascii=False)) for part, row in shard_rows(self.plan, self.key, rows)]
            yield from bounded_frames(shares, ["part", "cache", "row"], self.frame_bytes)


def _text(term_id: str | None, text: str | None) -> str | None:
    if isinstance(text, str):
        return text
    return str(decode_inline(int(term_id))) if isinstance(term_id, str) else None


def _start(session, plan: JobPlan, lines, initial, output, sink, post_url, checkpoint: Path, job_id: str, default_stream, trigger_ms):
    from pyspark.sql import functions as sf

    conf = session.conf
    conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    conf.set("spark.sql.shuffle.partitions", str(plan.tasks))
    # A micro-batch without data only moves the watermark, which releases nothing the batch
    # before did not (stages.partition_step): it would cost a batch for no output.
    conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(FRAME_BYTES))
    # Read while the query runs, so not put back: the report keeps a record of every micro-batch.
    conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    # Spark keeps the event-time watermark (withWatermark, the lateness its delay) and hands it to
    # the partitions (EventTime mode). The watermarked column is projected away before them, so
    # Spark drops no late row silently: the partitions report each as a ``late`` line.
    routed = (
        lines.mapInPandas(_Router(plan, default_stream), _ROUTED)
        .withColumn("event_time", sf.timestamp_millis("time"))
        .withWatermark("event_time", f"{plan.lateness_ms} milliseconds")
        .drop("event_time")
    )
    outputs = routed.groupBy("part").transformWithStateInPandas(
        _PartitionProcessor(plan, job_id), _OUTPUT, "append", "EventTime", initialState=None if initial is None else initial.groupBy("part")
    )
    merged = outputs.withColumn("stage", sf.lit(0)).groupBy("stage").transformWithStateInPandas(
        _GlobalProcessor(plan, job_id), "value string", "append", "None"
    )
    writer = merged.writeStream.option("checkpointLocation", str(checkpoint)).outputMode("append")
    if trigger_ms is not None:
        writer = writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    if sink == "file":
        return writer.format("text").option("path", str(output)).start()
    if sink == "console":
        return writer.foreachBatch(_print_lines).start()
    return writer.foreachBatch(_Poster(post_url)).start()


class _Router:
    """Step 1 (module docstring) over the micro-batch's lines (``stages.route_lines``)."""

    def __init__(self, plan: JobPlan, default_stream: str | None):
        self.plan = plan
        self.default_stream = default_stream
        self.frame_bytes = FRAME_BYTES

    def __call__(self, frames):
        numbers: dict[str, int] = {}  # a task reads its files whole and in order: it numbers their lines
        for frame in frames:
            offsets = frame["line"] if "line" in frame else [None] * len(frame)  # Kafka: the record's offset
            events, changes = [], []
            for value, file, offset, static in zip(frame["value"], frame["file"], offsets, frame["static"]):
                line = (value, file, _next(numbers, file) if offset is None or pd.isna(offset) else int(offset))
                (changes if static else events).append(line)
            routed = route_changes(self.plan, changes) + route_lines(self.plan, events, self.default_stream)
            yield from bounded_frames(routed, list(Routed._fields), self.frame_bytes)


def _next(numbers: dict[str, int], file: str) -> int:
    numbers[file] = numbers.get(file, 0) + 1
    return numbers[file]


class _Processor(StatefulProcessor):
    """A step of the job on Spark's state: ``job_id`` names the live stages of this job in the
    worker (``_LIVE``)."""

    def __init__(self, plan: JobPlan, job_id: str):
        self.plan = plan
        self.job_id = job_id
        self.frame_bytes = FRAME_BYTES

    def live(self) -> dict:
        return _LIVE.setdefault(self.job_id, {})

    def close(self) -> None:
        pass


class _PartitionProcessor(_Processor):
    """Step 2 (module docstring) for one partition (``stages.partition_step`` on Spark's state)."""

    def init(self, handle) -> None:
        self.meta = handle.getValueState("meta", _PARTITION_META)
        self.events = handle.getListState("events", _EVENT)
        self.shard = handle.getListState("shard", _CACHE_ROW)
        self.static = handle.getListState("static", "change string")
        self.unevaluated = handle.getValueState("unevaluated", "count long")

    def handleInitialState(self, key, initial, timer_values) -> None:  # noqa: N802 (the PySpark API)
        """The partition's rows of the large caches (the job's first micro-batch only: a restart
        finds them in the state)."""
        self.shard.appendList([(cache, row) for _part, cache, row in initial.itertuples(index=False, name=None)])

    def stored_shard(self) -> dict:
        found: dict = {}
        for cache, row in self.shard.get():
            sparql, schema = json.loads(cache)
            rows = found.setdefault((sparql, tuple(schema)), [])
            if row is not None:
                rows.append(tuple(json.loads(row)))
        return found

    def handleInputRows(self, key, rows, timer_values) -> Iterator:  # noqa: N802 (the PySpark API)
        frame = pd.concat(list(rows), ignore_index=True)
        state = PartitionState()
        if self.meta.exists():
            version, clock, origin = self.meta.get()
            stored = list(self.events.get())
            state = PartitionState(
                version, clock, origin,
                [Event(*entry[:5]) for entry in stored if not entry[5]], [Event(*entry[:5]) for entry in stored if entry[5]],
                [change for (change,) in self.static.get()],
                self.unevaluated.get()[0] if self.unevaluated.exists() else 0,
            )
        applied = len(state.static)
        routed = [Routed(int(p), int(t), f, int(n), s, d, k) for p, t, f, n, s, d, k in frame.itertuples(index=False, name=None)]
        watermark = timer_values.getCurrentWatermarkInMs()
        outputs = partition_step(self.plan, int(key[0]), state, routed, self.live(), watermark, self.stored_shard)
        if len(state.static) > applied:
            self.static.appendList([(change,) for change in state.static[applied:]])
        self.unevaluated.update((state.unevaluated,))
        self.events.clear()
        if state.retained or state.pending:
            self.events.put([(*e, False) for e in state.retained] + [(*e, True) for e in state.pending])
        # clock and origin stay null until the partition has seen an event.
        self.meta.update((state.version, state.clock, state.origin))
        yield from bounded_frames(outputs, list(Output._fields), self.frame_bytes)


class _GlobalProcessor(_Processor):
    """Step 3 (module docstring) (``stages.global_step`` on Spark's state)."""

    def init(self, handle) -> None:
        self.meta = handle.getValueState("meta", _GLOBAL_META)
        self.relation = handle.getListState("relation", _RELATION)

    def handleInputRows(self, key, rows, timer_values) -> Iterator:  # noqa: N802 (the PySpark API)
        frame = pd.concat(list(rows), ignore_index=True)
        state = GlobalState()
        if self.meta.exists():
            version, time = self.meta.get()
            relation = [(tuple(json.loads(row)), count) for row, count in self.relation.get()]
            state = GlobalState(version, time, relation)
        outputs = [Output(int(t), f, int(n), k, p) for t, f, n, k, p, _stage in frame.itertuples(index=False, name=None)]
        lines = global_step(self.plan, state, outputs, self.live())
        if self.plan.partitioned:
            self.relation.clear()
            if state.relation:
                self.relation.put([(json.dumps(list(row), ensure_ascii=False), count) for row, count in state.relation])
        self.meta.update((state.version, state.time))
        yield from bounded_frames([(line,) for line in lines], ["value"], self.frame_bytes)


def bounded_frames(rows: Sequence[tuple], columns: list[str], limit: int) -> Iterator[pd.DataFrame]:
    """``rows`` as DataFrames of ``columns`` holding at most ``limit`` characters of text each
    (``FRAME_BYTES``; a row longer than that alone), in order; none when there are no rows."""
    start, size = 0, 0
    for end, row in enumerate(rows):
        length = sum(len(value) for value in row if isinstance(value, str))
        if size + length > limit and end > start:
            yield pd.DataFrame(rows[start:end], columns=columns)
            start, size = end, 0
        size += length
    if start < len(rows):
        yield pd.DataFrame(rows[start:], columns=columns)


def _print_lines(frame, batch_id: int) -> None:
    for row in frame.collect():
        print(row.value, flush=True)


class _Poster:
    """The ``post`` sink: each emission's triples POSTed as N-Triples to a ``cqels serve`` stream
    at the emission's time (``?time=``)."""

    def __init__(self, url: str):
        self.url = url

    def __call__(self, frame, batch_id: int) -> None:
        for row in frame.collect():
            item = json.loads(row.value)
            if "triples" not in item:
                log.warning("spark-job post sink: not an emission, not posted: %s", row.value)
                continue
            if not item["triples"]:
                continue
            separator = "&" if "?" in self.url else "?"
            request = urllib.request.Request(
                f"{self.url}{separator}time={item['time']}",
                data=item["triples"].encode(),
                headers={"Content-Type": "application/n-triples"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()


def input_lines(events: str | Path) -> list[tuple[str, str, int]]:
    """The ``(text, file name, line number)`` of every line of the files in ``events``, as the job
    reads them (``stages.single_process_lines`` takes them)."""
    found = []
    for path in sorted(p for p in Path(events).iterdir() if p.is_file() and not p.name.startswith((".", "_"))):
        found.extend((text, path.name, number) for number, text in enumerate(path.read_text().splitlines(), 1))
    return found


def committed_lines(output: str | Path) -> list[str]:
    """The lines a file sink committed, in micro-batch order (files a failed micro-batch left
    behind are not read: Spark's ``_spark_metadata`` log lists the committed ones)."""
    log_dir = Path(output) / "_spark_metadata"
    logs: dict[int, tuple[bool, list[str]]] = {}
    for path in log_dir.iterdir() if log_dir.is_dir() else ():
        stem, _, suffix = path.name.partition(".")
        if stem.isdigit() and suffix in ("", "compact"):
            files = [json.loads(line)["path"] for line in path.read_text().splitlines()[1:] if line.strip()]
            logs[int(stem)] = (suffix == "compact", files)
    # A compact log holds the files of every batch up to its own, in order.
    start = max((batch for batch, (compact, _) in logs.items() if compact), default=-1)
    lines: list[str] = []
    for batch in sorted(b for b in logs if b >= start):
        for file in logs[batch][1]:
            local = Path(file.removeprefix("file://").removeprefix("file:"))
            lines.extend(line for line in local.read_text().splitlines() if line)
    return lines
