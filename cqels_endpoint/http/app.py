"""The Flask app factory: ``create_app(store, config)`` wires the blueprints to one store.

| path | verbs | module |
|---|---|---|
| ``/query``, ``/sparql`` | GET, POST | ``query.py`` — SPARQL 1.1 Protocol query |
| ``/update`` | POST | ``update.py`` — SPARQL 1.1 Protocol update |
| ``/store``, ``/store/…`` | GET HEAD PUT POST DELETE | ``graph_store.py`` — Graph Store Protocol |
| ``/health`` | GET | here |

Errors are JSON (``errors.py``); writes need the bearer token when one is configured (``auth.py``).
"""

from __future__ import annotations

from flask import Flask, Response, jsonify

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http import graph_store, query, update
from cqels_endpoint.http.context import EXTENSION, Endpoint, endpoint
from cqels_endpoint.http.errors import register_error_handlers
from static_store import StaticStore


def create_app(store: StaticStore, config: ServerConfig | None = None) -> Flask:
    """A WSGI app serving ``store``; the caller owns the store and closes it."""
    config = config or ServerConfig()
    app = Flask("cqels_endpoint")
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes
    # Multipart GSP bodies are RDF files of any size up to the body limit, not small form fields.
    app.config["MAX_FORM_MEMORY_SIZE"] = config.max_body_bytes
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.extensions[EXTENSION] = Endpoint(store, config)
    register_error_handlers(app)
    app.register_blueprint(query.blueprint)
    app.register_blueprint(update.blueprint)
    app.register_blueprint(graph_store.blueprint)
    app.add_url_rule("/health", "health", _health, methods=["GET"])
    return app


def _health() -> Response:
    store = endpoint().store
    return jsonify({"status": "ok", "quads": len(store), "version": store.version})
