"""The web console: ``GET /`` is its page, ``/console/…`` its files (``http/console_files/``).

The console is static HTML, CSS and JavaScript with CodeMirror 5 vendored under
``console_files/vendor/codemirror`` (MIT, its LICENSE beside it): nothing is built at install and nothing
is fetched from another site. It talks to the server only through the HTTP API docs/http.md documents
(``/query``, ``/update``, ``/store``, ``/streams``, ``/queries``, results streams, ``/sources``,
``/sinks``); ``/console/settings.json`` tells it whether writes need a bearer token or are refused,
under ``cqels serve --demo`` (its demo stream on) the demo query to open on (``demo_query``, else
null), and the choices of a source's or sink's declaration (``connectors``: kinds, formats,
overflows), so that its forms offer what the server reads.
"""

from __future__ import annotations

import mimetypes
from importlib import resources

from flask import Blueprint, Response, abort, jsonify

from cqels_endpoint.connectors.events import EVENT_FORMATS
from cqels_endpoint.connectors.specs import OVERFLOWS, SINK_FORMATS, SINK_KINDS, SOURCE_KINDS, TIME_SOURCES, SinkSpec, SourceSpec
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.demo import DEMO_QUERY_NAME

blueprint = Blueprint("console", __name__)

_FILES = resources.files("cqels_endpoint.http") / "console_files"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8"}


def _default_first(values: tuple[str, ...] | list[str], default: str) -> list[str]:
    return sorted(values, key=lambda value: value != default)


# What the forms of "Sources & sinks" offer: the declarations' own choices (connectors.specs), each
# list led by the declaration's default, which the form shows selected.
CONNECTOR_CHOICES = {
    "source_kinds": list(SOURCE_KINDS),
    "source_formats": _default_first(list(EVENT_FORMATS), SourceSpec.format),
    "times": _default_first(TIME_SOURCES, SourceSpec.time),
    "sink_kinds": list(SINK_KINDS),
    "sink_formats": _default_first(SINK_FORMATS, SinkSpec.format),
    "overflows": _default_first(OVERFLOWS, SinkSpec.overflow),
}


@blueprint.get("/")
def page() -> Response:
    return _file("index.html")


@blueprint.get("/console/settings.json")
def settings() -> Response:
    config = endpoint().config
    demo_query = DEMO_QUERY_NAME if config.demo and config.demo_stream == "on" else None
    return jsonify({"auth_required": config.auth_token is not None, "read_only": config.read_only, "demo_query": demo_query,
                    "connectors": CONNECTOR_CHOICES})


@blueprint.get("/console/<path:name>")
def asset(name: str) -> Response:
    return _file(name)


def _file(name: str) -> Response:
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        abort(404)
    target = _FILES.joinpath(*parts)
    if not target.is_file():
        abort(404)
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    response = Response(target.read_bytes(), content_type=content_type)
    # Revalidated on every load: a server upgrade never leaves a stale console in a browser.
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
