"""``/query`` (alias ``/sparql``): the SPARQL 1.1 Protocol query operation on the static store.

Three ways to send a query (Protocol §2.1): ``GET ?query=``, ``POST`` a form with ``query=``, or
``POST`` the query itself as ``application/sparql-query``. ``default-graph-uri`` and
``named-graph-uri`` (repeatable) set the dataset and override the query's FROM / FROM NAMED.
Results are negotiated from ``Accept`` (``?format=`` overrides it). Continuous queries belong
under ``/queries/{name}``: the store's parser, told that streams are not allowed, says so.
"""

from __future__ import annotations

from flask import Blueprint, Response

from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.negotiation import negotiated
from cqels_endpoint.http.params import base_iri, iris, operation_and_params, single
from cqels_endpoint.runtime.functions.extensions import custom_functions
from static_store import GRAPH_FORMATS, RESULTS_FORMATS

SPARQL_QUERY = "application/sparql-query"

blueprint = Blueprint("query", __name__)


@blueprint.route("/query", methods=["GET", "POST"])
@blueprint.route("/sparql", methods=["GET", "POST"])
def query() -> Response:
    text, params = operation_and_params("query", SPARQL_QUERY)
    default_graphs = iris(params, "default-graph-uri")
    named_graphs = iris(params, "named-graph-uri")
    store, config = endpoint().store, endpoint().config
    # The store parses the query (streams not allowed: the error points to /queries/{name}) and
    # runs it; the result's kind then picks the serialisation.
    result = store.query(
        text,
        base_iri=base_iri(),
        default_graph_uris=default_graphs or None,
        named_graph_uris=named_graphs or None,
        timeout=config.query_timeout,
        allow_remote=config.allow_remote,
        custom_functions=custom_functions(),
    )
    fmt = negotiated(GRAPH_FORMATS if result.is_graph else RESULTS_FORMATS, single(params, "format", "give one"))
    response = Response(result.serialize(fmt.media_type), content_type=fmt.content_type)
    response.vary.add("Accept")
    return response
