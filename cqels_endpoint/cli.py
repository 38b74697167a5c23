"""The ``cqels`` command line: one sub-command per job (``explain`` today).

Every flag has an environment twin named ``CQELS_<FLAG>`` (``--base-iri`` ↔ ``CQELS_BASE_IRI``);
a flag given on the command line wins over the environment. Exit codes: 0 success, 2 bad input
(a query that does not parse or cannot be planned, an unreadable file, a bad flag), 1 anything else.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from cqels_endpoint.client import ServerError
from cqels_endpoint.errors import CqelsError, PlanError, QuerySyntaxError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cqels`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (QuerySyntaxError, PlanError) as error:
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ServerError as error:
        # A client command's request refused by the server: a 4xx is the input's fault.
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if 400 <= error.status < 500 else EXIT_FAILURE
    except CqelsError as error:
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cqels",
        description="A SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_explain(commands)
    _add_serve(commands)
    _add_load(commands)
    _add_push(commands)
    _add_replay(commands)
    _add_register(commands)
    _add_watch(commands)
    return parser


# --------------------------------------------------------------------------- flags with env twins


def _env_name(flag: str) -> str:
    return "CQELS_" + flag.lstrip("-").replace("-", "_").upper()


def _option(parser: argparse.ArgumentParser, flag: str, help: str, **kwargs) -> None:
    """A valued flag whose default comes from its ``CQELS_*`` environment twin."""
    env = _env_name(flag)
    parser.add_argument(flag, default=os.environ.get(env, kwargs.pop("default", None)), help=f"{help} [env {env}]", **kwargs)


def _switch(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A boolean flag; its environment twin accepts 1/true/yes/on and 0/false/no/off."""
    env = _env_name(flag)
    raw = os.environ.get(env, "").strip().lower()
    if raw not in _TRUE | _FALSE:
        parser.error(f"{env}={raw!r} is not a boolean; use 1/true/yes/on or 0/false/no/off")
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=raw in _TRUE, help=f"{help} [env {env}]")


# --------------------------------------------------------------------------- explain


def _add_explain(commands) -> None:
    from cqels_endpoint.algebra.passes import PASSES

    explain = commands.add_parser(
        "explain",
        help="print the algebra of a query, optimised, and its static/stream split",
        description="Print the SPARQL algebra of a (continuous) query as S-expressions: as translated, "
        "after the optimizer passes, and the split into stream patterns and static caches.",
    )
    explain.add_argument("query", metavar="FILE|-", help="the query file, or - to read standard input")
    _option(explain, "--base-iri", "resolve relative IRIs of the query against this IRI", metavar="IRI")
    _switch(explain, "--full-iris", "print IRIs in full instead of abbreviating them with the query's prefixes")
    _option(
        explain,
        "--passes",
        f"comma-separated optimizer passes to run, in order (default: all of {','.join(PASSES)})",
        metavar="NAMES",
        default=",".join(PASSES),
    )
    explain.set_defaults(handler=_explain)


def _explain(args: argparse.Namespace) -> int:
    from cqels_endpoint import parse_query
    from cqels_endpoint.algebra.explain import explain
    from cqels_endpoint.algebra.passes import PASSES

    rules = []
    for name in filter(None, (part.strip() for part in args.passes.split(","))):
        if name not in PASSES:
            print(f"cqels explain: unknown pass {name!r}; the passes are {', '.join(PASSES)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        rules.append(PASSES[name])
    text = _read(args.query)
    if text is None:
        return EXIT_BAD_INPUT
    query = parse_query(text, args.base_iri)
    print(explain(query, full_iris=args.full_iris, rules=tuple(rules)))
    return EXIT_OK


# --------------------------------------------------------------------------- serve


def _add_serve(commands) -> None:
    from cqels_endpoint.config import CACHE_ENGINES, DEFAULT_CACHE_ENGINE, DEFAULT_DATA_DIR, DEFAULT_HOST
    from cqels_endpoint.config import DEFAULT_MAX_BODY_MB, DEFAULT_PORT, DEFAULT_QUERY_TIMEOUT, DEFAULT_REBUILD_DEBOUNCE_MS

    serve = commands.add_parser(
        "serve",
        help="run the SPARQL endpoint over HTTP",
        description="Serve the store over HTTP: /query and /sparql (SPARQL 1.1 Protocol), /update, "
        "/store (Graph Store Protocol), /health and /metrics (Prometheus). The store lives in --data-dir and "
        "survives restarts.",
    )
    _option(serve, "--host", "interface to listen on; 0.0.0.0 opens the server to the network", default=DEFAULT_HOST)
    _option(serve, "--port", "TCP port; 0 picks a free one", type=int, default=DEFAULT_PORT)
    _option(
        serve, "--data-dir", "directory of the on-disk store, created if missing", default=str(DEFAULT_DATA_DIR),
        metavar="DIR",
    )
    _switch(serve, "--memory", "keep the store in memory only (gone at exit); --data-dir is ignored")
    _option(serve, "--auth-token", "require 'Authorization: Bearer TOKEN' on every write", metavar="TOKEN")
    _option(
        serve, "--query-timeout", "stop a one-shot query after this many seconds (0: never)", type=float,
        default=DEFAULT_QUERY_TIMEOUT, metavar="SECONDS",
    )
    _option(
        serve, "--max-body-mb", "refuse request bodies larger than this (413)", type=float,
        default=DEFAULT_MAX_BODY_MB, metavar="MIB",
    )
    _switch(serve, "--allow-remote", "allow LOAD and SERVICE of remote IRIs (refused with 403 otherwise)")
    _switch(serve, "--demo", "load the demo data (examples/data) into an empty store and print curl examples")
    _option(
        serve, "--cache-engine", "what computes the cached static sub-patterns of continuous queries: spark "
        "(one SparkSession, started in the background) or local (pyoxigraph, for small deployments)",
        choices=CACHE_ENGINES, default=DEFAULT_CACHE_ENGINE,
    )
    _option(serve, "--spark-master", "the Spark cluster of --cache-engine spark (default: local[*])", metavar="URL")
    _option(
        serve, "--rebuild-debounce-ms", "rebuild a static cache this long after the last change of its graphs",
        type=int, default=DEFAULT_REBUILD_DEBOUNCE_MS, metavar="MS",
    )
    _option(
        serve, "--lateness-ms", "accept events up to this much older than their stream's latest (reordered by time)",
        type=int, default=0, metavar="MS",
    )
    from cqels_endpoint.config import DEFAULT_KEEPALIVE_S, DEFAULT_REPLAY_BUFFER, DEFAULT_SUBSCRIBER_QUEUE, DEFAULT_THREADS

    _option(
        serve, "--threads", "request threads; every open results stream (GET /queries/NAME/results) holds one",
        type=int, default=DEFAULT_THREADS, metavar="N",
    )
    _option(
        serve, "--replay-buffer", "emissions kept per query for clients resuming with Last-Event-ID", type=int,
        default=DEFAULT_REPLAY_BUFFER, metavar="N",
    )
    _option(
        serve, "--subscriber-queue", "disconnect a results client that falls this many emissions behind", type=int,
        default=DEFAULT_SUBSCRIBER_QUEUE, metavar="N",
    )
    _option(
        serve, "--keepalive-s", "send an idle results stream a keep-alive after this many seconds", type=float,
        default=DEFAULT_KEEPALIVE_S, metavar="SECONDS",
    )
    from cqels_endpoint.config import DEFAULT_STREAM_BASE

    _option(
        serve, "--stream-base", "the IRI a short stream name is appended to: POST /streams/NAME pushes to "
        "<IRI>NAME", default=DEFAULT_STREAM_BASE, metavar="IRI",
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    from cqels_endpoint.config import ServerConfig
    from cqels_endpoint.http.app import create_app
    from cqels_endpoint.http.context import endpoint
    from cqels_endpoint.http.demo import curl_examples, load_demo
    from cqels_endpoint.http.queries import registry
    from cqels_endpoint.http.server import serve
    from static_store import StaticStore

    try:
        config = ServerConfig(
            host=args.host,
            port=args.port,
            data_dir=Path(args.data_dir),
            memory=args.memory,
            auth_token=args.auth_token,
            query_timeout=args.query_timeout,
            max_body_mb=args.max_body_mb,
            allow_remote=args.allow_remote,
            demo=args.demo,
            cache_engine=args.cache_engine,
            spark_master=args.spark_master,
            rebuild_debounce_ms=args.rebuild_debounce_ms,
            lateness_ms=args.lateness_ms,
            stream_base=args.stream_base,
            threads=args.threads,
            replay_buffer=args.replay_buffer,
            subscriber_queue=args.subscriber_queue,
            keepalive_s=args.keepalive_s,
        )
    except ValueError as error:
        print(f"cqels serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with StaticStore(config.store_path) as store:
        where = "in memory" if config.memory else f"in {config.data_dir.resolve()}"
        if config.demo:
            loaded = load_demo(store)
            if loaded is None:
                print("cqels serve: the store already holds data; demo data not loaded again")
            else:
                print(f"cqels serve: loaded the demo data ({loaded} quads)")

        def listening(base_url: str) -> None:
            print(
                f"cqels serve: store {where}, {len(store)} quads; listening on {base_url}/ "
                "(/query /update /store /streams /queries /health /metrics); Ctrl-C or SIGTERM stops",
                flush=True,
            )
            if config.demo:
                print(curl_examples(base_url, config.auth_token), flush=True)

        app = create_app(store, config)  # starts the stored queries again, before it listens
        restored = len(registry(app).stored)
        if restored:
            print(f"cqels serve: restored {restored} stored quer{'y' if restored == 1 else 'ies'} from {config.data_dir}",
                  flush=True)
        context = endpoint(app)
        context.start()  # the SparkSession of --cache-engine spark starts while the server already answers
        try:
            serve(
                app, config.host, config.port, max_body_bytes=config.max_body_bytes, threads=config.threads,
                on_listen=listening,
            )
        except OSError as error:  # port taken, unknown host
            print(f"cqels serve: cannot listen on {config.host}:{config.port}: {error}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            context.close()
    return EXIT_OK


# --------------------------------------------------------------------------- register


def _add_register(commands) -> None:
    from cqels_endpoint.client import DEFAULT_URL

    register = commands.add_parser(
        "register",
        help="store a continuous query on a running server (PUT /queries/NAME)",
        description="Send the query in FILE ('-' for stdin) to a running 'cqels serve' as NAME. A query with "
        "'# @param ?var' lines is a template: POST /queries/NAME/instances starts instances of it.",
    )
    register.add_argument("name", metavar="NAME", help="the query's name: letters, digits, '_', '.', '~', '-'")
    register.add_argument("file", metavar="FILE", help="the query text, '-' for stdin")
    _option(register, "--url", "base URL of the server", default=DEFAULT_URL, metavar="URL")
    _option(register, "--r2s", "ISTREAM, RSTREAM or DSTREAM (default: the query's REGISTER keyword, else ISTREAM)",
            metavar="R")
    _option(register, "--mode", "incremental or recompute (the oracle)", choices=("incremental", "recompute"),
            default="incremental")
    _option(register, "--auth-token", "the server's bearer token for writes", metavar="TOKEN")
    register.set_defaults(handler=_register)


def _register(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    from cqels_endpoint.client import Client, ServerError

    text = _read(args.file)
    if text is None:
        return EXIT_BAD_INPUT
    params = {"mode": args.mode} | ({"r2s": args.r2s} if args.r2s else {})
    try:
        answer = Client(args.url, args.auth_token).json(
            "PUT", f"/queries/{quote(args.name, safe='')}", body=text.encode("utf-8"),
            headers={"Content-Type": "application/sparql-query"}, params=params,
        )
    except ServerError as error:
        where = f" (line {error.line})" if error.line else ""
        print(f"cqels register: {error}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT if 400 <= error.status < 500 else EXIT_FAILURE
    parameters = answer["parameters"]
    kind = f"a template with parameters {', '.join('?' + p for p in parameters)}" if parameters else answer["r2s"]
    print(f"cqels register: stored {answer['name']} ({kind}, {answer['mode']})")
    return EXIT_OK


# --------------------------------------------------------------------------- load


def _add_load(commands) -> None:
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
    _option(load, "--graph", "load the triples into this named graph (default: the default graph); "
            "named graphs of TriG/N-Quads keep their names", metavar="IRI")
    _option(load, "--data-dir", "directory of the on-disk store, created if missing", default=str(DEFAULT_DATA_DIR),
            metavar="DIR")
    _option(load, "--format", "media type of the file when its extension does not say, e.g. text/turtle",
            metavar="MEDIA_TYPE")
    _option(load, "--base-iri", "resolve relative IRIs against this IRI (default: the file's file: IRI)",
            metavar="IRI")
    _switch(load, "--quiet", "no progress bar, only errors")
    _switch(load, "--spark", "parse and encode a large N-Triples/N-Quads file on Spark, in parallel, and load it "
            "in sorted runs (all or nothing, as without --spark)")
    _option(load, "--spark-master", "the Spark cluster of --spark (default: local[*]); FILE must then be readable "
            "at the same path on every worker", metavar="URL")
    load.set_defaults(handler=_load)


def _load(args: argparse.Namespace) -> int:
    import time

    from cqels_endpoint.errors import RdfSyntaxError, UnsupportedMediaType
    from static_store import StaticStore

    started = time.perf_counter()
    options = {
        "media_type": args.format,
        "graph": args.graph,
        "base_iri": args.base_iri,
        "progress": not args.quiet and sys.stderr.isatty(),
    }
    try:
        with StaticStore(args.data_dir) as store:
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


# --------------------------------------------------------------------------- push, replay (clients)


def _client_options(parser: argparse.ArgumentParser) -> None:
    from cqels_endpoint.client import DEFAULT_URL

    _option(parser, "--url", "the server's base URL", default=DEFAULT_URL, metavar="URL")
    _option(parser, "--auth-token", "the bearer token the server requires for writes", metavar="TOKEN")


def _client(args: argparse.Namespace):
    from cqels_endpoint.client import Client

    return Client(args.url, args.auth_token)


_NDJSON_EXTENSIONS = (".ndjson", ".jsonl")


def _add_push(commands) -> None:
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
    _option(push, "--time", "the event's timestamp: integer ms or an xsd:dateTime (default: its arrival)",
            metavar="T")
    _option(push, "--format", "the file's media type or name (turtle, nt, jsonld, trig, ndjson, ...) when its "
            "extension does not say", metavar="FORMAT")
    _client_options(push)
    push.set_defaults(handler=_push)


def _push(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cqels_endpoint.client import stream_path

    media_type = _event_media_type(args.file, args.format)
    if media_type is None:
        return EXIT_BAD_INPUT
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as error:
        print(f"cqels push: cannot read {args.file}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    answer = _client(args).json(
        "POST", stream_path(args.stream), body=data, headers={"Content-Type": media_type},
        params={"time": args.time} if args.time is not None else None,
    )
    print(f"cqels push: {answer['accepted']} event(s) accepted on <{answer['stream']}>; "
          f"its latest timestamp is {answer['latest']} ms")
    return EXIT_OK


def _event_media_type(path: str, format_name: str | None) -> str | None:
    """The media type to send ``path`` as, from ``--format`` or its extension; None after saying why not."""
    from pathlib import Path

    from cqels_endpoint.errors import UnsupportedMediaType
    from cqels_endpoint.http.negotiation import by_name
    from cqels_endpoint.http.streams import NDJSON, NDJSON_TYPES
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


def _add_replay(commands) -> None:
    from cqels_endpoint.replay import MAPPINGS

    replay = commands.add_parser(
        "replay",
        help="replay a CSV file as stream events to a running server",
        description="Map each row of FILE.csv to one stream event with --mapping and POST them to a running "
        "server in NDJSON batches, paced at --speed times real time by the events' timestamps (0: as fast as "
        "possible). A batch the server refuses stops the replay, naming the CSV line.",
    )
    replay.add_argument("file", metavar="FILE.csv", help="the CSV file")
    _option(replay, "--mapping", "how a row becomes RDF", choices=sorted(MAPPINGS), default="debs2015")
    _option(replay, "--stream", "the stream IRI or short name (default: the mapping's stream)", metavar="IRI")
    _option(replay, "--speed", "N times real time; 0 sends as fast as possible", type=float, default=1.0,
            metavar="N")
    _option(replay, "--limit", "replay only the first N rows", type=int, metavar="N")
    _option(replay, "--batch", "at most this many events per request", type=int, default=500, metavar="N")
    _client_options(replay)
    replay.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    import json
    import time
    from itertools import islice

    from cqels_endpoint.client import stream_path
    from cqels_endpoint.http.streams import NDJSON
    from cqels_endpoint.replay import MAPPINGS, MappingError, paced

    mapping = MAPPINGS[args.mapping]
    stream = args.stream or mapping.stream
    if args.limit is not None and args.limit < 0:
        print(f"cqels replay: --limit must be >= 0, not {args.limit}", file=sys.stderr)
        return EXIT_BAD_INPUT
    client = _client(args)
    started = time.perf_counter()
    sent = batches = 0
    latest = None
    try:
        for batch in paced(islice(mapping.events(args.file), args.limit), args.speed, args.batch):
            body = "".join(json.dumps({"time": event.time, "data": event.data}) + "\n" for event in batch)
            try:
                answer = client.json("POST", stream_path(stream), body=body.encode("utf-8"),
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


def _read(source: str) -> str | None:
    """The text of ``source`` (``-`` is standard input), or None after reporting why it cannot be read."""
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as error:
        print(f"cqels: cannot read {source}: {error}", file=sys.stderr)
        return None


# --------------------------------------------------------------------------- watch


def _add_watch(commands) -> None:
    from cqels_endpoint.client import DEFAULT_URL

    watch = commands.add_parser(
        "watch",
        help="print a registered query's emissions as a table, as they arrive",
        description="Follow GET /queries/NAME/results of a running server and print one table row per "
        "solution: time (ms), R2S kind, then the variables. Stops after --limit emissions, when the server "
        "ends the stream, or on Ctrl-C.",
    )
    watch.add_argument("name", metavar="NAME", help="the query's name (an instance: TEMPLATE/INSTANCE)")
    _option(watch, "--url", "base URL of the server", default=DEFAULT_URL, metavar="URL")
    _option(watch, "--limit", "stop after this many emissions", type=int, metavar="N")
    watch.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    from cqels_endpoint.client import Client
    from cqels_endpoint.watch import Table, emissions

    limit = args.limit
    if limit is not None and limit < 1:
        print(f"cqels watch: --limit must be at least 1, not {limit}", file=sys.stderr)
        return EXIT_BAD_INPUT
    table, seen = Table(), 0
    try:
        for emission in emissions(Client(args.url), args.name):
            print(table.rows(emission), flush=True)
            seen += 1
            if seen == limit:
                return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_OK
    print(f"cqels watch: the server ended the stream of {args.name!r} after {seen} emission(s)", file=sys.stderr)
    return EXIT_FAILURE


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cqels-endpoint")
    except PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
