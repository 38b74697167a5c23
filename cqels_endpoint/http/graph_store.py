"""``/store``: the SPARQL 1.1 Graph Store HTTP Protocol.

A graph is named indirectly, ``/store?graph=IRI`` or ``/store?default`` (exactly one), or
directly: ``/store/any/path`` *is* the graph whose IRI is that request URL. Verbs:

- GET / HEAD: 200 with the graph in the negotiated RDF format; 404 for a missing named graph.
  The bare ``/store`` is the whole dataset in N-Quads or TriG (as Oxigraph server serves it),
  its ETag the store version it holds.
- PUT: replace; 201 Created for a new graph, 204 when it replaced one.
- POST: merge; 201 for a new graph, 204 when it added to one. POST to ``/store`` itself creates
  a new graph under ``/store/`` and answers 201 with its IRI in ``Location`` (GSP §5.5) — except
  for a TriG or N-Quads body, whose quads are added to the dataset with their own graph names
  (204), as Oxigraph server does: a dataset has no single graph to create.
  A ``multipart/form-data`` body merges every file part, all in one write.
- DELETE: 204; 404 for a missing named graph. ``?default`` empties the default graph.

Bodies: Turtle, N-Triples, RDF/XML, JSON-LD, N-Quads, TriG (415 for anything else, 400 naming
the line for malformed RDF, nothing written).
"""

from __future__ import annotations

import uuid

from flask import Blueprint, Response, abort, request
from werkzeug.datastructures import FileStorage

from cqels_endpoint.errors import RdfSyntaxError
from cqels_endpoint.http.auth import require_write_access
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import bad_request, not_found
from cqels_endpoint.http.negotiation import negotiated
from cqels_endpoint.http.params import base_iri, check_utf8_charset, resolve_iri, single, url_params
from static_store import DATASET_FORMATS, GRAPH_FORMATS, RDF_INPUT_MEDIA_TYPES, StaticStore
from static_store.formats import is_dataset_format

blueprint = Blueprint("graph_store", __name__)

MULTIPART = "multipart/form-data"
ACCEPTED_BODIES = [*RDF_INPUT_MEDIA_TYPES, MULTIPART]
STORE_PATH = "/store"
_METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]


class _Target:
    """The graph a request names: ``graph`` is None for the default graph."""

    def __init__(self, graph: str | None, named: bool):
        self.graph = graph
        self.named = named  # False: the default graph

    def describe(self) -> str:
        return f"graph <{self.graph}>" if self.named else "the default graph"


@blueprint.route(STORE_PATH, methods=_METHODS)
@blueprint.route(f"{STORE_PATH}/<path:graph_path>", methods=_METHODS)
def graph_store(graph_path: str | None = None) -> Response:
    target = _target(direct=graph_path is not None)
    if request.method in ("GET", "HEAD"):
        return _get(target)
    require_write_access()
    if request.method == "DELETE":
        return _delete(target)
    return _write(target, replace=request.method == "PUT")


def _target(direct: bool) -> _Target | None:
    """The graph named by the request; None for the bare ``/store`` (the graph store itself)."""
    params = url_params()
    if direct:
        if "graph" in params or "default" in params:
            abort(bad_request("a graph named by its URL takes neither ?graph= nor ?default"))
        return _Target(base_iri(), named=True)
    if "graph" in params and "default" in params:
        abort(bad_request("give either ?graph=IRI or ?default, not both"))
    if "default" in params:
        if params["default"] != [""]:
            abort(bad_request("?default takes no value"))
        return _Target(None, named=False)
    graph = single(params, "graph", "name one graph per request")
    if graph is not None:
        return _Target(resolve_iri(graph, "graph"), named=True)
    return None


def _require(target: _Target | None) -> _Target:
    if target is None:
        abort(bad_request(f"{request.method} {STORE_PATH} needs ?graph=IRI or ?default"))
    return target


def _get(target: _Target | None) -> Response:
    store = endpoint().store
    if target is None:  # the whole dataset, as Oxigraph server serves it
        fmt = negotiated(DATASET_FORMATS, single(url_params(), "format", "give one"))
        version, body = store.dump(fmt.media_type)
        response = Response(body, content_type=fmt.content_type)
        response.set_etag(f"v{version}")
        response.vary.add("Accept")
        return response
    fmt = negotiated(GRAPH_FORMATS, single(url_params(), "format", "give one"))
    if target.named and not store.has_graph(target.graph):
        abort(not_found(f"no {target.describe()} in the store"))
    response = Response(store.get_graph(target.graph, fmt.media_type), content_type=fmt.content_type)
    response.vary.add("Accept")
    return response


def _delete(target: _Target | None) -> Response:
    target = _require(target)
    endpoint().store.delete_graph(target.graph)
    return Response(status=204)


def _write(target: _Target | None, *, replace: bool) -> Response:
    store = endpoint().store
    location = None
    if target is None:
        if replace:
            _require(target)
        if request.mimetype != MULTIPART and is_dataset_format(request.mimetype):
            data, media_type = _body()
            store.load(data, media_type=media_type, base_iri=base_iri())
            return Response(status=204)
        # GSP §5.5: POST to the graph store creates a new graph, named under the store's URL.
        location = f"{request.host_url.rstrip('/')}{STORE_PATH}/{uuid.uuid4().hex}"
        target = _Target(location, named=True)
    data, media_type = _body()
    base = target.graph if target.named else base_iri()
    write = store.put_graph if replace else store.post_graph
    # created also covers the default graph written while empty (GSP: its content is created).
    created, _event = write(target.graph, data, media_type, base_iri=base)
    response = Response(status=201 if created else 204)
    if location is not None:
        response.headers["Location"] = location
    return response


def _body() -> tuple[bytes, str]:
    """The RDF payload and its media type (the store refuses types it cannot read: 415).

    A multipart body becomes one N-Triples document.
    """
    if request.mimetype == MULTIPART:
        return _merged_parts(), "application/n-triples"
    check_utf8_charset(ACCEPTED_BODIES)
    return request.get_data(cache=True), request.mimetype


def _merged_parts() -> bytes:
    """Every file part parsed into a scratch store, returned as one N-Triples document.

    Merging in a scratch store first keeps a multipart POST one atomic write with one change
    event, and gives blank nodes of different parts distinct labels, as RDF merge requires.
    """
    parts: list[tuple[str, FileStorage]] = list(request.files.items(multi=True))
    if request.form:
        abort(bad_request(f"multipart field {next(iter(request.form))!r} is not a file part; send RDF as file parts"))
    if not parts:
        abort(bad_request("the multipart body has no file parts"))
    with StaticStore() as scratch:
        for name, part in parts:
            check_utf8_charset(ACCEPTED_BODIES, part)
            try:
                scratch.post_graph(None, part.read(), part.mimetype, base_iri=base_iri())
            except RdfSyntaxError as error:
                raise RdfSyntaxError(f"multipart part {name!r}: {error}", error.line, error.column) from None
        return scratch.get_graph(None, "application/n-triples")
