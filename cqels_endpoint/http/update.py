"""``/update``: the SPARQL 1.1 Protocol update operation (POST only; GET answers 405).

An update comes as a form with ``update=`` or as the body with ``application/sparql-update``;
``using-graph-uri`` / ``using-named-graph-uri`` (repeatable) set the dataset of its WHERE clauses
and may not be combined with USING / USING NAMED / WITH in the text (Protocol §2.2.3). Success is
204. ``LOAD`` and ``SERVICE`` of remote IRIs are refused (403) unless the server allows them.
"""

from __future__ import annotations

from flask import Blueprint, Response

from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.params import base_iri, iris, operation_and_params
from cqels_endpoint.runtime.functions.extensions import custom_functions

SPARQL_UPDATE = "application/sparql-update"

blueprint = Blueprint("update", __name__)


@blueprint.route("/update", methods=["POST"])
@write_access
def update() -> Response:
    text, params = operation_and_params("update", SPARQL_UPDATE)
    using_graphs = iris(params, "using-graph-uri")
    using_named_graphs = iris(params, "using-named-graph-uri")
    # The store refuses using-graph-uri together with USING/WITH in the text (Protocol §2.2.3).
    endpoint().store.update(
        text,
        base_iri=base_iri(),
        using_graph_uris=using_graphs or None,
        using_named_graph_uris=using_named_graphs or None,
        allow_remote=endpoint().config.allow_remote,
        custom_functions=custom_functions(),
    )
    return Response(status=204)
