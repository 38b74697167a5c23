"""``cqels serve``: the endpoint over HTTP."""

from __future__ import annotations

import argparse
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
    switch(serve, "--demo", "load the demo data (examples/data) into an empty store and print curl examples")
    option(
        serve, "--cache-engine", "what computes the cached static sub-patterns of continuous queries: spark "
        "(one SparkSession, started in the background) or local (pyoxigraph, for small deployments)",
        choices=CACHE_ENGINES, default=DEFAULT_CACHE_ENGINE,
    )
    option(serve, "--spark-master", "the Spark cluster of --cache-engine spark (default: local[*])", metavar="URL")
    option(
        serve, "--rebuild-debounce-ms", "rebuild a static cache this long after the last change of its graphs",
        type=int, default=DEFAULT_REBUILD_DEBOUNCE_MS, metavar="MS",
    )
    option(
        serve, "--lateness-ms", "accept events up to this much older than their stream's latest (reordered by time)",
        type=int, default=0, metavar="MS",
    )
    from cqels_endpoint.config import DEFAULT_KEEPALIVE_S, DEFAULT_REPLAY_BUFFER, DEFAULT_SUBSCRIBER_QUEUE, DEFAULT_THREADS

    option(
        serve, "--threads", "request threads; every open results stream (GET /queries/NAME/results) holds one",
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
    from cqels_endpoint.config import DEFAULT_STREAM_BASE

    option(
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
    from cqels_endpoint.static_store import StaticStore

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
