"""``cqels serve``: the endpoint over HTTP."""

from __future__ import annotations

import argparse
import signal
import sys

from cqels_endpoint.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, option, switch


def add_serve(commands) -> None:
    from cqels_endpoint.config import (
        CACHE_ENGINES,
        DEFAULT_CACHE_ENGINE,
        DEFAULT_DATA_DIR,
        DEFAULT_HOST,
        DEFAULT_MAX_BODY_MB,
        DEFAULT_PORT,
        DEFAULT_QUERY_TIMEOUT,
        DEFAULT_REBUILD_DEBOUNCE_MS,
        DEFAULT_SPARK_PARQUET_ROWS,
    )

    serve = commands.add_parser(
        "serve",
        help="run the SPARQL endpoint over HTTP",
        description="Serve the store over HTTP: /query and /sparql (SPARQL 1.1 Protocol), /update, "
        "/store (Graph Store Protocol), /health and /metrics (Prometheus). The store lives in --data-dir and "
        "survives restarts.",
    )
    option(serve, "--host", "interface to listen on; 0.0.0.0 opens the server to the network", default=DEFAULT_HOST)
    option(serve, "--port", "TCP port; 0 picks a free one", type=int, default=DEFAULT_PORT)
    option(
        serve, "--data-dir", "directory of the on-disk store, created if missing", default=str(DEFAULT_DATA_DIR),
        metavar="DIR",
    )
    switch(serve, "--memory", "keep the store in memory only (gone at exit); --data-dir is ignored")
    option(serve, "--auth-token", "require 'Authorization: Bearer TOKEN' on every write", metavar="TOKEN")
    option(
        serve, "--query-timeout", "stop a one-shot query after this many seconds (0: never)", type=float,
        default=DEFAULT_QUERY_TIMEOUT, metavar="SECONDS",
    )
    option(
        serve, "--max-body-mb", "refuse request bodies larger than this (413)", type=float,
        default=DEFAULT_MAX_BODY_MB, metavar="MIB",
    )
    switch(serve, "--allow-remote", "allow LOAD and SERVICE of remote IRIs (refused with 403 otherwise)")
    switch(serve, "--read-only", "refuse every write (update, Graph Store writes, stream pushes, query "
           "registration) with 403; reads and results streams stay open")
    serve.add_argument(
        "--cors-origin", action="append", metavar="ORIGIN",
        help="let web pages from ORIGIN (https://app.example.org, or * for any) call the endpoint; repeat the "
        "flag or give a comma list; without it no CORS header is sent [env CQELS_CORS_ORIGIN]",
    )
    from cqels_endpoint.config import DEFAULT_LOG_LEVEL, LOG_LEVELS

    option(
        serve, "--log-level", "the level of the server's log on standard error (Spark and Py4J log at WARNING "
        "or above)", default=DEFAULT_LOG_LEVEL, type=str.upper, choices=LOG_LEVELS,
    )
    switch(serve, "--demo", "load the demo data (examples/data) into an empty store, print curl examples and, "
           "unless --demo-stream off, register the continuous query 'demo' and feed it a looping demo stream")
    from cqels_endpoint.config import DEMO_STREAM_CHOICES

    option(
        serve, "--demo-stream", "with --demo: on pushes a demo event every half second (at its arrival time) "
        "until the first push of your own on any stream, or until the server stops; off never starts it",
        choices=DEMO_STREAM_CHOICES, default="on",
    )
    option(
        serve, "--cache-engine", "what computes the cached static sub-patterns of continuous queries: spark "
        "(one SparkSession, started in the background) or local (pyoxigraph, for small deployments)",
        choices=CACHE_ENGINES, default=DEFAULT_CACHE_ENGINE,
    )
    option(serve, "--spark-master", "the Spark cluster of --cache-engine spark (default: local[*])", metavar="URL")
    option(
        serve, "--spark-parquet-rows", "a --cache-engine spark build of more than this many rows is written as "
        "Parquet under --data-dir and read back in parts instead of collected to the server (0: always collected)",
        type=int, default=DEFAULT_SPARK_PARQUET_ROWS, metavar="N",
    )
    option(
        serve, "--rebuild-debounce-ms", "rebuild a static cache this long after the last change of its graphs",
        type=int, default=DEFAULT_REBUILD_DEBOUNCE_MS, metavar="MS",
    )
    option(
        serve, "--lateness-ms", "accept events up to this much older than their stream's latest (reordered by time)",
        type=int, default=0, metavar="MS",
    )
    option(
        serve, "--max-future-ms", "refuse (422) events further ahead of the server's clock than this (0: no bound)",
        type=int, default=0, metavar="MS",
    )
    from cqels_endpoint.config import DEFAULT_KEEPALIVE_S, DEFAULT_REPLAY_BUFFER, DEFAULT_SUBSCRIBER_QUEUE, DEFAULT_THREADS

    option(
        serve, "--threads", "worker threads of the requests that evaluate or write (results streams hold none)",
        type=int, default=DEFAULT_THREADS, metavar="N",
    )
    option(
        serve, "--replay-buffer", "emissions kept per query for clients resuming with Last-Event-ID", type=int,
        default=DEFAULT_REPLAY_BUFFER, metavar="N",
    )
    option(
        serve, "--subscriber-queue", "disconnect a results client that falls this many emissions behind", type=int,
        default=DEFAULT_SUBSCRIBER_QUEUE, metavar="N",
    )
    option(
        serve, "--keepalive-s", "send an idle results stream a keep-alive after this many seconds", type=float,
        default=DEFAULT_KEEPALIVE_S, metavar="SECONDS",
    )
    from cqels_endpoint.config import LIMIT_ACTIONS

    option(
        serve, "--max-window-triples", "a continuous query's window may hold at most this many triples (0: no bound)",
        type=int, default=0, metavar="N",
    )
    option(
        serve, "--max-tick-rows", "a continuous query's operators may produce at most this many rows in one "
        "evaluation, or the query fails (0: no bound)", type=int, default=0, metavar="N",
    )
    option(
        serve, "--limit-action", "past --max-window-triples: fail the query (its subscribers get an error event) or "
        "shed the new triples (counted in /queries and /metrics)", choices=LIMIT_ACTIONS, default="fail",
    )
    from cqels_endpoint.config import DEFAULT_STREAM_BASE

    option(
        serve, "--stream-base", "the IRI a short stream name is appended to: POST /streams/NAME pushes to "
        "<IRI>NAME", default=DEFAULT_STREAM_BASE, metavar="IRI",
    )
    from cqels_endpoint.config import DIALECTS

    option(
        serve, "--dialect", "what a continuous query registered without ?dialect= means: auto (CQELS-QL 2.0 for "
        "REGISTER QUERY Name AS, else CQELS 1), cqels (CQELS 1) or cqels2 (CQELS-QL 2.0)", choices=DIALECTS, default="auto",
    )
    serve.add_argument(
        "--source", action="append", default=[], metavar="NAME=URL", dest="sources",
        help="start the source NAME reading URL: mqtt[s]://[user@]host[:port]/TOPIC?stream=S&format=F&qos=1, or "
        "ws[s]://host[:port]/path?stream=S&format=F (docs/connectors.md); kept in --data-dir like PUT /sources/NAME; "
        "repeatable [env CQELS_SOURCE: NAME=URL entries separated by spaces]",
    )
    serve.add_argument(
        "--sink", action="append", default=[], metavar="NAME=URL", dest="sinks",
        help="start the sink NAME publishing a query's emissions: mqtt[s]://[user@]host[:port]/TOPIC?query=Q&format=json "
        "(or ntriples for CONSTRUCT); kept like PUT /sinks/NAME; repeatable [env CQELS_SINK, as CQELS_SOURCE]",
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import logging
    from dataclasses import fields
    from pathlib import Path

    from cqels_endpoint.config import ServerConfig

    # Every flag is named after its ServerConfig field, but --cors-origin (repeatable, comma lists) and the
    # repeatable --source and --sink (tuples in the config).
    given = {field.name: getattr(args, field.name) for field in fields(ServerConfig) if hasattr(args, field.name)}
    given["data_dir"] = Path(args.data_dir)
    given["cors_origins"] = _cors_origins(args.cors_origin)
    given["sources"] = _connector_flags(args.sources, "CQELS_SOURCE")
    given["sinks"] = _connector_flags(args.sinks, "CQELS_SINK")
    try:
        config = ServerConfig(**given)
    except ValueError as error:
        print(f"cqels serve: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Until the server listens (and ``serve`` takes the signals over), SIGTERM stops the start-up
    # as Ctrl-C does: the store and the engine close on the way out, without a traceback.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _start_and_serve(config)
    except KeyboardInterrupt:
        print("cqels serve: stopped while starting", file=sys.stderr)
        return EXIT_OK
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _start_and_serve(config) -> int:
    from cqels_endpoint.connectors.specs import SpecError
    from cqels_endpoint.http.app import create_app
    from cqels_endpoint.http.asgi import application
    from cqels_endpoint.http.context import endpoint
    from cqels_endpoint.http.demo import DEMO_QUERY_NAME, DEMO_STREAM, DemoStream, curl_examples, load_demo
    from cqels_endpoint.http.queries import registry
    from cqels_endpoint.http.server import serve
    from cqels_endpoint.oxigraph.requests import open_store

    with open_store(config.store_path) as store:
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
            if demo is not None:
                # Registered and fed from its thread: a Spark cache build must not hold up the start.
                demo.start()
                print(
                    f"cqels serve: the demo stream feeds the continuous query {DEMO_QUERY_NAME!r} on <{DEMO_STREAM}> "
                    f"(see it live in the console: {base_url}/); a push of your own stops it, --demo-stream off "
                    "turns it off", flush=True,
                )

        try:
            app = create_app(store, config)  # starts the stored queries and connectors again, before it listens
        except SpecError as error:
            print(f"cqels serve: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        restored = len(registry(app).stored)
        if restored:
            print(f"cqels serve: restored {restored} stored quer{'y' if restored == 1 else 'ies'} from {config.data_dir}",
                  flush=True)
        context = endpoint(app)
        for role in ("source", "sink"):
            for connector in context.connectors.listed(role):
                print(f"cqels serve: {role} {connector.name!r} ({connector.spec.kind} {connector.spec.address})", flush=True)
        demo = DemoStream(registry(app)) if config.demo and config.demo_stream == "on" else None

        def stopping() -> None:
            if demo is not None:
                demo.stop()  # first: nothing is pushed while the results streams end
            context.connectors.close()
            context.subscriptions.close()

        try:
            context.start()  # the SparkSession of --cache-engine spark starts while the server already answers
            serve(application(app), config.host, config.port, on_listen=listening, on_stop=stopping,
                  message_limit=config.max_body_bytes)
        except OSError as error:  # port taken, unknown host
            print(f"cqels serve: cannot listen on {config.host}:{config.port}: {error}", file=sys.stderr)
            return EXIT_FAILURE
        finally:
            if demo is not None:
                demo.stop()  # before the engine closes: never a push into a closed engine
            context.close()
    return EXIT_OK


def _connector_flags(flags: list[str], env: str) -> tuple[str, ...]:
    """The ``NAME=URL`` of every ``--source`` (``--sink``), else of its environment twin (space-separated)."""
    import os

    return tuple(flags) if flags else tuple(os.environ.get(env, "").split())


def _cors_origins(flags: list[str] | None) -> tuple[str, ...]:
    """The origins of every ``--cors-origin`` (each a comma list), else of ``CQELS_CORS_ORIGIN``."""
    import os

    given = flags if flags is not None else [os.environ.get("CQELS_CORS_ORIGIN", "")]
    return tuple(origin.strip() for value in given for origin in value.split(",") if origin.strip())
