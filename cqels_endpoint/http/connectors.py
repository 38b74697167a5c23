"""Sources and sinks over HTTP: ``/sources``, ``/sources/{name}``, ``/sinks``, ``/sinks/{name}``.

The connectors themselves (transports, state, the ``connectors.json`` file) are
``cqels_endpoint.connectors``'; these views translate requests into their calls.

| path | verbs | what |
|---|---|---|
| ``/sources``, ``/sinks`` | GET | every connector: its ``state`` and ``reason``, its counters, its declaration (``spec``) |
| ``/sources/{name}``, ``/sinks/{name}`` | PUT | start one from a JSON declaration (``connectors.specs``) in place of one of that name; 201, 200 |
| ``/sources/{name}``, ``/sinks/{name}`` | GET | one connector, as listed; 404 |
| ``/sources/{name}``, ``/sinks/{name}`` | DELETE | stop it and forget it; 204 |

The states: ``connecting``, ``connected``, ``retrying`` (``reason``: the last failure,
``retry_in_s``), ``failed`` (``reason``), ``stopped``; a sink ``waiting`` for its query to be
registered. A declaration that cannot be a connector is a 400 naming the field. A source's
counters: ``received`` messages, ``accepted`` events, ``rejected`` messages by reason
(``malformed``, ``late``, ``future``), ``late`` events accepted out of order, ``lag_ms`` (how far
its newest event's time is behind the wall clock) and ``last_message_ms_ago``. A sink's:
``published``, ``failed`` publishes, ``dropped`` emissions (its buffer full), ``buffered``.
Writes need the token and are refused in read-only mode, as every write.
"""

from __future__ import annotations

import json

from flask import Blueprint, Flask, Response, abort, jsonify, request

from cqels_endpoint.connectors.base import Connector
from cqels_endpoint.connectors.registry import ROLES, SINK, SOURCE
from cqels_endpoint.connectors.specs import to_json
from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import bad_request, unsupported_media_type
from cqels_endpoint.http.params import body_text, check_utf8_charset

blueprint = Blueprint("connectors", __name__)


def install(app: Flask) -> None:
    """Starts the connectors of the file again, then those of the ``--source``/``--sink`` flags (a
    flag replaces a kept connector of its name, and is kept in its turn); after the stored queries,
    so that the first event a source pushes reaches them."""
    context = endpoint(app)
    connectors, config = context.connectors, context.config
    # Every flag is read before any connector starts: a bad one starts none.
    declared = [connectors.spec_from_flag(role, flag) for role, flags in ((SOURCE, config.sources), (SINK, config.sinks))
                for flag in flags]
    connectors.restore()
    for spec in declared:
        connectors.put(spec)


def listed(connector: Connector) -> dict:
    """A connector's entry in the listings: its state and counters, then its declaration."""
    return {**connector.status(), "spec": to_json(connector.spec)}


def _list(role: str) -> Response:
    return jsonify({role + "s": [listed(c) for c in endpoint().connectors.listed(role)]})


def _put(role: str, name: str) -> Response:
    if request.mimetype != "application/json":
        abort(unsupported_media_type(request.content_type, ["application/json"]))
    check_utf8_charset(["application/json"])
    try:
        data = json.loads(body_text("JSON"))
    except ValueError as error:
        abort(bad_request(f"the body is not JSON: {error}"))
    connectors = endpoint().connectors
    connector, created = connectors.put(connectors.spec(role, name, data))
    response = jsonify(listed(connector))
    response.status_code = 201 if created else 200
    response.headers["Location"] = f"/{role}s/{name}"
    return response


def _get(role: str, name: str) -> Response:
    return jsonify(listed(endpoint().connectors.get(role, name)))


def _delete(role: str, name: str) -> Response:
    endpoint().connectors.delete(role, name)
    return Response(status=204)


for _role in ROLES:
    blueprint.add_url_rule(f"/{_role}s", f"list_{_role}s", lambda role=_role: _list(role), methods=["GET"])
    blueprint.add_url_rule(f"/{_role}s/<name>", f"get_{_role}", lambda name, role=_role: _get(role, name), methods=["GET"])
    blueprint.add_url_rule(f"/{_role}s/<name>", f"put_{_role}", write_access(lambda name, role=_role: _put(role, name)),
                           methods=["PUT"])
    blueprint.add_url_rule(f"/{_role}s/<name>", f"delete_{_role}",
                           write_access(lambda name, role=_role: _delete(role, name)), methods=["DELETE"])
