"""The SPARQL Protocol's everyday requests answered before Flask, for the latency of a point lookup.

A point lookup costs pyoxigraph about 0.1 ms; Flask's request context, routing and response
objects cost more than that again. ``ProtocolFastPath`` wraps the Flask app's WSGI callable and
answers, itself, the plain successful forms of the two hot operations:

- ``GET /query?query=…`` (or ``/sparql``) with no other parameter, and ``POST`` of an
  ``application/sparql-query`` body with no parameters;
- ``POST /update`` of an ``application/sparql-update`` body with no parameters, with the bearer
  token when the server has one.

Everything else goes to Flask untouched, and so does any of these requests the moment something is
off before evaluation (a parameter, a body that is not UTF-8, a format the client does not accept,
a token that does not match): Flask then handles the whole request with the routes' own checks. An
error of the evaluation itself (a syntax error, a timeout) is handed to Flask with the request
(``FAST_PATH_ERROR``), which raises it before any route runs: the JSON error is the app's own, and
nothing is evaluated twice. The routes in ``query.py`` and ``update.py`` stay the definition of the
protocol; ``tests/http/test_http_fast_path.py`` checks that both give the same answers.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from urllib.parse import parse_qsl

from flask import Flask, request
from werkzeug.http import parse_options_header
from werkzeug.wsgi import get_host

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.auth import denial_reason
from cqels_endpoint.http.negotiation import choose
from cqels_endpoint.http.params import base_iri_of, is_utf8_charset
from cqels_endpoint.runtime.functions.extensions import custom_functions
from static_store import GRAPH_FORMATS, RESULTS_FORMATS, StaticStore
from static_store.shape import query_shape

#: WSGI environ key of the store's exception for a request the fast path began and Flask answers.
FAST_PATH_ERROR = "cqels.fast_path_error"

_QUERY_PATHS = frozenset({"/query", "/sparql"})
_GRAPH_FORMS = ("CONSTRUCT", "DESCRIBE")

Answer = tuple[str, list[tuple[str, str]], bytes]


def install(app: Flask, store: StaticStore, config: ServerConfig) -> None:
    """Put the fast path in front of ``app`` and let ``app`` raise the errors it hands over."""
    app.wsgi_app = ProtocolFastPath(app.wsgi_app, store, config)

    @app.before_request
    def _raise_fast_path_error() -> None:
        error = request.environ.get(FAST_PATH_ERROR)
        if error is not None:
            raise error


class ProtocolFastPath:
    """WSGI middleware in front of the Flask app's ``wsgi_app`` (see ``install``)."""

    def __init__(self, flask_wsgi: Callable, store: StaticStore, config: ServerConfig):
        self._flask = flask_wsgi
        self._store = store
        self._config = config

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD")
        try:
            if path in _QUERY_PATHS and method in ("GET", "POST"):
                evaluate = self._query(environ, method)
            elif path == "/update" and method == "POST":
                evaluate = self._update(environ)
            else:
                evaluate = None
        except (UnicodeDecodeError, ValueError):
            evaluate = None  # Flask's checks say what is wrong
        answer = None
        if evaluate is not None:
            try:
                answer = evaluate()
            except Exception as error:  # the app's error handlers answer it, as for the route
                environ[FAST_PATH_ERROR] = error
        if answer is None:
            return self._flask(environ, start_response)
        status, headers, body = answer
        start_response(status, [*headers, ("Content-Length", str(len(body)))])
        return [body]

    def _query(self, environ: dict, method: str) -> Callable[[], Answer] | None:
        """The evaluation of a plain query request, or None for Flask to handle the request."""
        if method == "GET":
            text = _only_param(environ, "query")
            if text is None:
                return None
        else:
            if (
                environ.get("QUERY_STRING")
                or not _is_utf8_body(environ, "application/sparql-query")
                or not 0 <= _content_length(environ) <= self._config.max_body_bytes
            ):
                return None
            text = _read_body(environ).decode("utf-8")
        base = _base_iri(environ)
        formats = GRAPH_FORMATS if query_shape(text).form in _GRAPH_FORMS else RESULTS_FORMATS
        fmt = choose(formats, environ.get("HTTP_ACCEPT"))
        if fmt is None:
            return None  # the route answers 406

        def evaluate() -> Answer:
            result = self._store.query(
                text,
                base_iri=base,
                timeout=self._config.query_timeout,
                allow_remote=self._config.allow_remote,
                custom_functions=custom_functions(),
            )
            headers = [("Content-Type", fmt.content_type), ("Vary", "Accept")]
            return "200 OK", headers, result.serialize(fmt.media_type)

        return evaluate

    def _update(self, environ: dict) -> Callable[[], Answer] | None:
        """The execution of a plain update request, or None for Flask to handle the request."""
        if (
            environ.get("QUERY_STRING")
            or not _is_utf8_body(environ, "application/sparql-update")
            or self._config.read_only  # the route answers 403
            or denial_reason(environ.get("HTTP_AUTHORIZATION"), self._config.auth_token) is not None
            or not 0 <= _content_length(environ) <= self._config.max_body_bytes
        ):
            return None
        text = _read_body(environ).decode("utf-8")
        base = _base_iri(environ)

        def execute() -> Answer:
            self._store.update(text, base_iri=base, allow_remote=self._config.allow_remote, custom_functions=custom_functions())
            return "204 NO CONTENT", [("Content-Type", "text/html; charset=utf-8")], b""

        return execute


def _only_param(environ: dict, name: str) -> str | None:
    """The value of ``name`` when the query string holds that parameter once and nothing else."""
    pairs = parse_qsl(
        environ.get("QUERY_STRING", "").encode("latin-1").decode("utf-8"),
        keep_blank_values=True,
        encoding="utf-8",
        errors="strict",
    )
    if len(pairs) != 1 or pairs[0][0] != name:
        return None
    return pairs[0][1]


def _is_utf8_body(environ: dict, media_type: str) -> bool:
    mimetype, options = parse_options_header(environ.get("CONTENT_TYPE", ""))
    return mimetype.lower() == media_type and is_utf8_charset(options.get("charset"))


def _content_length(environ: dict) -> int:
    return int(environ.get("CONTENT_LENGTH") or -1)


def _read_body(environ: dict) -> bytes:
    """The body, read once and put back, so that Flask can still read it if the request goes there."""
    body = environ["wsgi.input"].read(_content_length(environ))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _base_iri(environ: dict) -> str:
    """``request.base_url``, from the environ as werkzeug's request reads it."""
    path = "/" + environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8").lstrip("/")
    root = environ.get("SCRIPT_NAME", "").encode("latin-1").decode("utf-8").rstrip("/")
    return base_iri_of(environ["wsgi.url_scheme"], get_host(environ), root, path)
