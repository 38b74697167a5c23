"""``cqels load``, ``cqels push`` and ``cqels replay``: static graphs into a store, events onto a server's streams."""

from __future__ import annotations

import argparse
import sys

from cqels_endpoint.cli.client import ServerError
from cqels_endpoint.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, client, client_options, option, switch


def add_load(commands) -> None:
    from cqels_endpoint.config import DEFAULT_DATA_DIR

    load = commands.add_parser(
        "load",
        help="bulk-load an RDF file into the on-disk store",
        description="Load N-Triples, N-Quads, Turtle, TriG, RDF/XML or JSON-LD (syntax from the file "
        "extension .nt .nq .ttl .trig .rdf .owl .xml .jsonld, or --format) into the store of a data "
        "directory, in one transaction: malformed data writes nothing. Stop a server using the same "
        "data directory first, or send the file to its /store endpoint instead. With --spark, a large "
        "N-Triples/N-Quads file is parsed and dictionary-encoded on Spark in parallel, then loaded in runs "
        "sorted by (graph, subject, predicate, object), still in one transaction.",
    )
    load.add_argument("file", metavar="FILE", help="the RDF file to load")
    option(load, "--graph", "load the triples into this named graph (default: the default graph); "
            "named graphs of TriG/N-Quads keep their names", metavar="IRI")
    option(load, "--data-dir", "directory of the on-disk store, created if missing", default=str(DEFAULT_DATA_DIR),
            metavar="DIR")
    option(load, "--format", "media type of the file when its extension does not say, e.g. text/turtle",
            metavar="MEDIA_TYPE")
    option(load, "--base-iri", "resolve relative IRIs against this IRI (default: the file's file: IRI)",
            metavar="IRI")
    switch(load, "--quiet", "no progress bar, only errors")
    switch(load, "--spark", "parse and encode a large N-Triples/N-Quads file on Spark, in parallel, and load it "
            "in sorted runs (all or nothing, as without --spark)")
    option(load, "--spark-master", "the Spark cluster of --spark (default: local[*]); FILE must then be readable "
            "at the same path on every worker", metavar="URL")
    load.set_defaults(handler=_load)


def _load(args: argparse.Namespace) -> int:
    import time

    from cqels_endpoint.errors import RdfSyntaxError, UnsupportedMediaType
    from cqels_endpoint.oxigraph.requests import open_store

    started = time.perf_counter()
    options = {
        "media_type": args.format,
        "graph": args.graph,
        "base_iri": args.base_iri,
        "progress": not args.quiet and sys.stderr.isatty(),
    }
    try:
        with open_store(args.data_dir) as store:
            event = _load_on_spark(store, args, options) if args.spark else store.load(args.file, **options)
            total = len(store)
    except (RdfSyntaxError, UnsupportedMediaType, OSError) as error:
        print(f"cqels load: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.quiet:
        seconds = time.perf_counter() - started
        changes = event.changes if event is not None else ()
        added = sum(change.added for change in changes)
        graphs = ", ".join("the default graph" if c.graph is None else f"<{c.graph}>" for c in changes)
        where = f" into {graphs}" if graphs else ""
        print(f"cqels load: {added} new quads{where} in {seconds:.1f} s; the store in {args.data_dir} "
              f"holds {total} quads")
    return EXIT_OK


def _load_on_spark(store, args: argparse.Namespace, options: dict):
    from pathlib import Path

    from cqels_endpoint.spark.bulk_load import line_format, spark_load
    from cqels_endpoint.spark.session import SparkSessionHolder

    line_format(Path(args.file), args.format)  # a Turtle file is refused before a JVM starts
    spark = SparkSessionHolder(master=args.spark_master)
    try:
        return spark_load(store, args.file, spark.get(), **options)
    finally:
        spark.stop()






_NDJSON_EXTENSIONS = (".ndjson", ".jsonl")


def add_push(commands) -> None:
    push = commands.add_parser(
        "push",
        help="push events from a file to a stream of a running server",
        description="POST FILE to /streams/STREAM of a running server. STREAM is a stream IRI or a short name "
        "under the server's --stream-base. Turtle, N-Triples, JSON-LD, RDF/XML, N3: one event, at --time or at "
        "its arrival; TriG: one event per named graph, timestamped by prov:generatedAtTime in the default graph; "
        'NDJSON (.ndjson, .jsonl): one event per line {"time": ..., "data": "<N-Triples>"}. The server applies '
        "the file all or nothing.",
    )
    push.add_argument("stream", metavar="STREAM", help="the stream IRI, or a short name under the server's stream base")
    push.add_argument("file", metavar="FILE|-", help="the events; - reads standard input (then give --format)")
    option(push, "--time", "the event's timestamp: integer ms or an xsd:dateTime (default: its arrival)",
            metavar="T")
    option(push, "--format", "the file's media type or name (turtle, nt, jsonld, trig, ndjson, ...) when its "
            "extension does not say", metavar="FORMAT")
    client_options(push)
    push.set_defaults(handler=_push)


def _push(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cqels_endpoint.cli.client import stream_path

    media_type = _event_media_type(args.file, args.format)
    if media_type is None:
        return EXIT_BAD_INPUT
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as error:
        print(f"cqels push: cannot read {args.file}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    answer = client(args).json(
        "POST", stream_path(args.stream), body=data, headers={"Content-Type": media_type},
        params={"time": args.time} if args.time is not None else None,
    )
    print(f"cqels push: {answer['accepted']} event(s) accepted on <{answer['stream']}>; "
          f"its latest timestamp is {answer['latest']} ms")
    return EXIT_OK


def _event_media_type(path: str, format_name: str | None) -> str | None:
    """The media type to send ``path`` as, from ``--format`` or its extension; None after saying why not."""
    from pathlib import Path

    from cqels_endpoint.connectors.events import NDJSON, NDJSON_TYPES
    from cqels_endpoint.errors import UnsupportedMediaType
    from cqels_endpoint.http.negotiation import by_name
    from static_store import GRAPH_FORMATS
    from static_store.formats import rdf_format_for_path

    if format_name is not None:
        if format_name.lower() in ("ndjson", "jsonl", *NDJSON_TYPES):
            return NDJSON
        fmt = by_name(GRAPH_FORMATS, format_name)
        if fmt is None:
            names = ", ".join(f.names[0] for f in GRAPH_FORMATS)
            print(f"cqels push: unknown --format {format_name!r}; use a media type or one of {names}, ndjson",
                  file=sys.stderr)
            return None
        return fmt.media_type
    if Path(path).suffix.lower() in _NDJSON_EXTENSIONS:
        return NDJSON
    try:
        return rdf_format_for_path(path).media_type
    except UnsupportedMediaType as error:
        print(f"cqels push: {error}, {' '.join(_NDJSON_EXTENSIONS)} for NDJSON; or give --format", file=sys.stderr)
        return None


def add_replay(commands) -> None:
    from cqels_endpoint.cli.replay import MAPPINGS

    replay = commands.add_parser(
        "replay",
        help="replay a CSV file as stream events to a running server",
        description="Map each row of FILE.csv to one stream event with --mapping and POST them to a running "
        "server in NDJSON batches, paced at --speed times real time by the events' timestamps (0: as fast as "
        "possible). A batch the server refuses stops the replay, naming the CSV line.",
    )
    replay.add_argument("file", metavar="FILE.csv", help="the CSV file")
    option(replay, "--mapping", "how a row becomes RDF", choices=sorted(MAPPINGS), default="debs2015")
    option(replay, "--stream", "the stream IRI or short name (default: the mapping's stream)", metavar="IRI")
    option(replay, "--speed", "N times real time; 0 sends as fast as possible", type=float, default=1.0,
            metavar="N")
    option(replay, "--limit", "replay only the first N rows", type=int, metavar="N")
    option(replay, "--batch", "at most this many events per request", type=int, default=500, metavar="N")
    client_options(replay)
    replay.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    import json
    import time
    from itertools import islice

    from cqels_endpoint.cli.client import stream_path
    from cqels_endpoint.cli.replay import MAPPINGS, MappingError, paced
    from cqels_endpoint.connectors.events import NDJSON

    mapping = MAPPINGS[args.mapping]
    stream = args.stream or mapping.stream
    if args.limit is not None and args.limit < 0:
        print(f"cqels replay: --limit must be >= 0, not {args.limit}", file=sys.stderr)
        return EXIT_BAD_INPUT
    server = client(args)
    started = time.perf_counter()
    sent = batches = 0
    latest = None
    try:
        for batch in paced(islice(mapping.events(args.file), args.limit), args.speed, args.batch):
            body = "".join(json.dumps({"time": event.time, "data": event.data}) + "\n" for event in batch)
            try:
                answer = server.json("POST", stream_path(stream), body=body.encode("utf-8"),
                                     headers={"Content-Type": NDJSON})
            except ServerError as error:
                # The server names the NDJSON line of the batch; the user knows the CSV line.
                where = f" at CSV line {batch[error.line - 1].line}" if error.line and error.line <= len(batch) else ""
                print(f"cqels replay: the batch of CSV lines {batch[0].line}-{batch[-1].line} was refused{where}: "
                      f"{error}; {sent} events were sent before it", file=sys.stderr)
                return EXIT_BAD_INPUT if 400 <= error.status < 500 else EXIT_FAILURE
            sent += len(batch)
            batches += 1
            latest = answer["latest"]
    except (OSError, MappingError, ValueError) as error:
        print(f"cqels replay: {error}; {sent} events were sent before it", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"cqels replay: {sent} events in {batches} batches to <{stream}> in {time.perf_counter() - started:.1f} s; "
          f"its latest timestamp is {latest} ms")
    return EXIT_OK
