"""``cqels spark-job``: a continuous query as a Spark Structured Streaming job (``streaming.job``)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from cqels_endpoint.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, dialect_option, option, read_source, switch


def add_spark_job(commands) -> None:
    job = commands.add_parser(
        "spark-job",
        help="run a continuous query as a Spark Structured Streaming job over event files or Kafka",
        description="Run the continuous query in FILE on Spark: events from the NDJSON or timestamped N-Triples/N-Quads "
        "files of --events (or a Kafka topic), partitioned by a key variable where the query has one (cqels explain "
        "says), results as JSON lines to --output, the console or a cqels serve stream. Stops when every file present "
        "is processed unless --follow; restarting with the same --checkpoint goes on where it stopped.",
    )
    job.add_argument("query", metavar="FILE|-", help="the query file, or - to read standard input")
    option(job, "--events", "the directory of event files (one event per line)", metavar="DIR")
    option(job, "--output", "the file sink's directory (JSON lines: one emission per line)", metavar="DIR")
    option(job, "--sink", "where results go", choices=("file", "console", "post"), default=None)
    option(job, "--post-to", "the post sink's URL: a cqels serve stream (http://HOST:PORT/streams/NAME); CONSTRUCT only",
           metavar="URL")
    option(job, "--master", "the Spark master URL (default local[*])", metavar="URL")
    option(job, "--checkpoint", "the checkpoint directory: a restart with the same one continues the job", metavar="DIR")
    option(job, "--partitions", "how many partitions evaluate the query (default: Spark's default parallelism)", type=int,
           metavar="N")
    job.add_argument("--static", action="append", default=[], metavar="FILE",
                     help="an RDF file of static data every partition reads (repeatable)")
    option(job, "--static-endpoint", "the static data is the store of this running cqels serve (read through the Graph "
           "Store Protocol; with --follow, watched by its version)", metavar="URL")
    option(job, "--follow-interval", "with --follow, how often the static data is checked for a change (default 1)",
           type=float, default=1.0, metavar="SECONDS")
    option(job, "--inline-cache-rows", "a static cache of more rows never reaches the driver: it is joined as a DataFrame, "
           "each partition getting its rows (default 10000; smaller ones are shipped with the plan, up to 256 KiB)",
           type=int, metavar="N")
    option(job, "--stream", "the stream of lines that name none (timestamped N-Triples, NDJSON without \"stream\")",
           metavar="IRI")
    option(job, "--max-files-per-trigger", "files per micro-batch (default: every new file)", type=int, metavar="N")
    option(job, "--lateness-ms", "the delay of Spark's event-time watermark (default: the query's LATENESS, else 0)", type=int, metavar="MS")
    option(job, "--r2s", "ISTREAM, RSTREAM or DSTREAM (default: the query's REGISTER keyword, else ISTREAM; RSTREAM for a cqels2 directional query)",
           metavar="R")
    option(job, "--name", "the query's name in the emissions (default: its REGISTER name, else q1)", metavar="NAME")
    option(job, "--trigger-ms", "start a micro-batch every MS milliseconds (default: as soon as the last ends)", type=int,
           metavar="MS")
    option(job, "--kafka-bootstrap", "read events from Kafka at these bootstrap servers (needs the Spark Kafka connector)",
           metavar="HOSTS")
    option(job, "--kafka-topic", "the Kafka topic of the events", metavar="TOPIC")
    switch(job, "--follow", "keep running and pick up new files and changes of the static data, which reach the "
           "partitions at the next micro-batch (default: stop when every file present is processed)")
    switch(job, "--partial-aggregates", "where the key is not a group key, each partition aggregates its own solutions "
           "(COUNT, SUM, AVG, MIN, MAX, SAMPLE) and the global stage merges them (cqels explain says which)")
    dialect_option(job, "auto")
    switch(job, "--verify", "then run the single-process engine over the same files and check that the output holds its "
           "emissions, line for line (file sink)")
    job.set_defaults(handler=_spark_job)


def _spark_job(args: argparse.Namespace) -> int:
    from cqels_endpoint.errors import ArgumentError
    from cqels_endpoint.streaming.job import run_job

    text = read_source(args.query)
    if text is None:
        return EXIT_BAD_INPUT
    sink = args.sink or ("file" if args.output else "post" if args.post_to else "console")
    kafka = None
    if args.kafka_bootstrap or args.kafka_topic:
        if not (args.kafka_bootstrap and args.kafka_topic):
            print("cqels spark-job: Kafka needs both --kafka-bootstrap and --kafka-topic", file=sys.stderr)
            return EXIT_BAD_INPUT
        kafka = (args.kafka_bootstrap, args.kafka_topic)
    elif not args.events:
        print("cqels spark-job: give the events: --events DIR, or --kafka-bootstrap and --kafka-topic", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        report = run_job(
            text, args.events, output=args.output, sink=sink, post_url=args.post_to, master=args.master,
            partitions=args.partitions, checkpoint=args.checkpoint, static=args.static,
            max_files_per_trigger=args.max_files_per_trigger, lateness_ms=args.lateness_ms, r2s=args.r2s, name=args.name,
            default_stream=args.stream, until_done=not args.follow, trigger_ms=args.trigger_ms, kafka=kafka,
            static_endpoint=args.static_endpoint, follow_interval_s=args.follow_interval,
            partial_aggregates=args.partial_aggregates, dialect=args.dialect or "auto",
            **({} if args.inline_cache_rows is None else {"inline_cache_rows": args.inline_cache_rows}),
        )
    except ArgumentError as error:
        print(f"cqels spark-job: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    summary = {
        **report.plan,
        "micro_batches": len(report.batches),
        "input_rows": report.input_rows,
        "seconds": round(report.wall_seconds, 3),
        **({"emissions": report.emissions, "output": args.output} if sink == "file" else {}),
    }
    print(json.dumps(summary, ensure_ascii=False), file=sys.stderr)
    if args.verify:
        return _verify(text, args)
    return EXIT_OK


def _verify(text: str, args: argparse.Namespace) -> int:
    from cqels_endpoint.streaming.follow import static_nquads
    from cqels_endpoint.streaming.job import committed_lines, input_lines
    from cqels_endpoint.streaming.plan import job_plan
    from cqels_endpoint.streaming.stages import comparable, single_process_lines

    if not args.output or not args.events:
        print("cqels spark-job: --verify reads the event files and the file sink's output (--events, --output)", file=sys.stderr)
        return EXIT_BAD_INPUT
    plan = job_plan(text, 1, name=args.name, r2s=args.r2s, lateness_ms=args.lateness_ms, dialect=args.dialect or "auto")
    plan = replace(plan, static_nquads=static_nquads(args.static))
    expected = single_process_lines(plan, input_lines(args.events), args.stream)
    got = committed_lines(args.output)
    if comparable(got, plan.ordered) == comparable(expected, plan.ordered):
        print(f"verified: the {len(got)} emissions are the single-process engine's", file=sys.stderr)
        return EXIT_OK
    pairs = zip(comparable(got, plan.ordered), comparable(expected, plan.ordered))
    differ = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(got), len(expected)))
    print(f"cqels spark-job: the output differs from the single-process engine at emission {differ + 1} "
          f"({len(got)} emissions against {len(expected)})", file=sys.stderr)
    return EXIT_FAILURE
