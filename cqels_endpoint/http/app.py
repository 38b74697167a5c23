"""The Flask app factory: ``create_app(store, config, engine)`` wires the blueprints to one store and
one continuous engine. The server runs it behind ``asgi.application(app)``, which answers the hot
routes natively (marked *native*) and hands every other request to Flask.

| path | verbs | module |
|---|---|---|
| ``/query``, ``/sparql`` | GET, POST | ``query.py`` — SPARQL 1.1 Protocol query (its plain forms *native*) |
| ``/update`` | POST | ``update.py`` — SPARQL 1.1 Protocol update (its plain form *native*) |
| ``/store``, ``/store/…`` | GET HEAD PUT POST DELETE | ``graph_store.py`` — Graph Store Protocol |
| ``/streams/{name}``, ``/streams``, ``/streams/{name}/clock`` | POST GET DELETE | ``streams.py`` — push (*native*), list, reset a clock |
| ``/queries/{name}/results`` | GET HEAD | ``results.py`` — emissions as Server-Sent Events or NDJSON (*native*) |
| ``/streams/{name}/ws``, ``/queries/{name}/ws`` | WebSocket | ``sockets.py`` — push batches, read emissions (*native*) |
| ``/queries``, ``/queries/{name}``, ``/queries/{name}/instances`` | GET PUT DELETE POST | ``queries.py`` — stored queries, parameters, instances |
| ``/sources``, ``/sources/{name}``, ``/sinks``, ``/sinks/{name}`` | GET PUT DELETE | ``connectors.py`` — MQTT and WebSocket sources, MQTT sinks |
| ``/``, ``/console/…`` | GET | ``console.py`` — the web console |
| ``/health`` | GET HEAD | ``asgi.py`` (*native*) |
| ``/metrics`` | GET | ``metrics.py`` — Prometheus text exposition |

Errors are JSON (``errors.py``); writes need the bearer token when one is configured and are refused
in read-only mode (``auth.py``); CORS headers only for configured origins (``cors.py``, around the
ASGI app).
"""

from __future__ import annotations

from flask import Flask
from werkzeug.routing import Rule

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.engine import Engine, Limits
from cqels_endpoint.engine.registry import FILE_NAME as QUERIES_FILE
from cqels_endpoint.http import connectors, console, graph_store, metrics, queries, query, streams, update
from cqels_endpoint.http.context import EXTENSION, Endpoint, endpoint
from cqels_endpoint.http.errors import register_error_handlers
from cqels_endpoint.spark import cache_engine
from cqels_endpoint.spark.job import SparkCacheEngine
from static_store import StaticStore

#: The routes ``asgi.py`` answers and Flask never sees, in Flask's URL map all the same: a request
#: with another method gets the 405 naming the allowed ones, as on every route.
NATIVE_ROUTES = (("/streams/<path:name>", "POST"), ("/queries/<path:name>/results", "GET"), ("/health", "GET"))


def create_app(store: StaticStore, config: ServerConfig | None = None, engine: Engine | None = None) -> Flask:
    """A WSGI app serving ``store``; the caller owns the store and closes it.

    Without ``engine`` the app builds its own over ``store``, with the cache engine (and its Spark
    Parquet threshold, its files under ``data_dir``) and rebuild debounce of ``config``;
    ``endpoint(app).close()`` closes it again. The Spark session of a
    ``spark`` cache engine is not started here (``endpoint(app).start()`` does, in the background):
    an app built only to answer one-shot queries never starts a JVM.
    """
    config = config or ServerConfig()
    app = Flask("cqels_endpoint")
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes
    # Multipart GSP bodies are RDF files of any size up to the body limit, not small form fields.
    app.config["MAX_FORM_MEMORY_SIZE"] = config.max_body_bytes
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.extensions[EXTENSION] = _endpoint(store, config, engine)
    register_error_handlers(app)
    for path, method in NATIVE_ROUTES:
        app.url_map.add(Rule(path, methods=[method], endpoint=f"native {path}", merge_slashes=False))
    app.register_blueprint(query.blueprint)
    app.register_blueprint(update.blueprint)
    app.register_blueprint(graph_store.blueprint)
    app.register_blueprint(metrics.blueprint)
    app.register_blueprint(streams.blueprint)
    app.register_blueprint(queries.blueprint)
    app.register_blueprint(console.blueprint)
    # The stored queries start again now, before the app serves its first event.
    queries.install(app, endpoint(app).engine, None if config.memory else config.data_dir / QUERIES_FILE)
    app.register_blueprint(connectors.blueprint)
    connectors.install(app)
    return app


def _endpoint(store: StaticStore, config: ServerConfig, engine: Engine | None) -> Endpoint:
    if engine is not None:
        return Endpoint(store, config, engine, owns_engine=False)
    # Spark's Parquet builds and snapshots go under the data directory (a temporary one in memory mode).
    caches = cache_engine(
        config.cache_engine, config.spark_master, start=False, data_dir=config.store_path,
        parquet_rows=config.spark_parquet_rows or None,  # 0: always collected
    )
    limits = Limits(config.max_window_triples or None, config.max_tick_rows or None, config.limit_action)
    engine = Engine(
        store,
        config.lateness_ms,
        cache_engine=caches,
        rebuild_debounce_ms=config.rebuild_debounce_ms,
        limits=limits,
        stream_base=config.stream_base,
        dialect=config.dialect,
    )
    return Endpoint(store, config, engine, spark=caches.session_holder if isinstance(caches, SparkCacheEngine) else None)
