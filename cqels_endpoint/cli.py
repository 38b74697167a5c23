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
        serve, "--query-timeout", "stop a one-shot query after this many seconds", type=float,
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
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    from cqels_endpoint.config import ServerConfig
    from cqels_endpoint.http.app import create_app
    from cqels_endpoint.http.context import endpoint
    from cqels_endpoint.http.demo import curl_examples, load_demo
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
                "(/query /update /store /health /metrics); Ctrl-C or SIGTERM stops",
                flush=True,
            )
            if config.demo:
                print(curl_examples(base_url, config.auth_token), flush=True)

        app = create_app(store, config)
        context = endpoint(app)
        context.start()  # the SparkSession of --cache-engine spark starts while the server already answers
        try:
            serve(app, config.host, config.port, max_body_bytes=config.max_body_bytes, on_listen=listening)
        except OSError as error:  # port taken, unknown host
            print(f"cqels serve: cannot listen on {config.host}:{config.port}: {error}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            context.close()
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cqels-endpoint")
    except PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
