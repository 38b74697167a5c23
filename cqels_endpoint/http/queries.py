"""Stored continuous queries over HTTP: ``/queries``, ``/queries/{name}``, ``/queries/{name}/instances``.

The registry itself (templates, instances, the ``queries.json`` file) is the engine's
(``engine.registry``); these views translate requests into its calls.

| path | verbs | what |
|---|---|---|
| ``/queries`` | GET | every stored query: name, status (``running``, ``template``, ``failed`` + ``error``), R2S, mode, emissions… |
| ``/queries`` | GET | … and ``cache_errors``: its static caches whose last rebuild failed (error, time), still serving their previous build |
| ``/queries/{name}`` | PUT | store and start a query (``application/sparql-query``; ``?r2s=``, ``?mode=``, ``?dialect=``, ``?parameter=``…); 201, 409 taken |
| ``/queries/{name}`` | GET | its text, R2S, mode, dialect, status, parameters, instances, ``explain`` with counters, emission counts |
| ``/queries/{name}`` | DELETE | stop it and every instance; 204 |
| ``/queries/{name}/instances`` | POST | instances of a template (below); 201 |
| ``/queries/{name}/{instance}`` | GET, DELETE | one instance |

**Parameters.** A query declares parameters in comment lines of its text, ``# @param ?var`` (several
per line allowed, ``$var`` too), or the PUT names them, ``?parameter=var``. A query with parameters
is a *template*: it is checked (parsed and planned) but not started. ``POST
/queries/{name}/instances`` with ``{"bindings": {"var": {"type": "uri", "value": …}}, "name": …}``
(SPARQL 1.1 JSON result terms; ``name`` optional) — or a JSON list of such objects, created all or
none — starts one query per object, its parameters bound to the terms (``algebra.parameters``).
Every parameter must be bound, nothing else may be. An instance is named ``{name}/{instance}``
(``instance`` the given name or the next number) in the engine, its results and ``/metrics``.
``explain`` of an instance shows the plan its batch shares, or why its template needs a plan per
instance. Unless the server keeps its store in memory, the stored queries are kept in
``queries.json`` in the data directory and started again before the server accepts a request.

**Failures.** A query the engine stopped (past its limits, ``runtime.limits``) shows ``"status":
"failed"`` and the reason in ``"error"``, here and for its instances, until it is deleted; its
results subscribers got an ``error`` event (``results.py``). ``"shed"`` counts the triples its
full windows did not take (``--limit-action shed``).
"""

from __future__ import annotations

import json
from pathlib import Path

from flask import Blueprint, Flask, Response, abort, current_app, jsonify, request

from cqels_endpoint.engine import ContinuousQuery, Engine
from cqels_endpoint.engine.directional import DirectionalQuery
from cqels_endpoint.engine.registry import NAME, Instance, QueryRegistry, StoredQuery
from cqels_endpoint.errors import ArgumentError, PlanError, QueryConflictError, UnknownQueryError
from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import bad_request, error_response, not_found, unsupported_media_type
from cqels_endpoint.http.params import body_text, check_utf8_charset, single, url_params
from cqels_endpoint.http.query import SPARQL_QUERY

blueprint = Blueprint("queries", __name__)

EXTENSION = "cqels_queries"


def install(app: Flask, engine: Engine, path: Path | None) -> QueryRegistry:
    """Gives ``app`` its query registry and restores the stored queries (before any request)."""
    registry = QueryRegistry(engine, path)
    registry.restore()
    app.extensions[EXTENSION] = registry
    return registry


def registry(app: Flask | None = None) -> QueryRegistry:
    return (app or current_app).extensions[EXTENSION]


# --------------------------------------------------------------------------- the views


@blueprint.errorhandler(QueryConflictError)
def _conflict(error: QueryConflictError) -> Response:
    return error_response(409, str(error))


@blueprint.errorhandler(UnknownQueryError)
def _unknown(error: UnknownQueryError) -> Response:
    return not_found(str(error))


@blueprint.errorhandler(PlanError)
def _plan(error: PlanError) -> Response:
    return bad_request(f"the query cannot run continuously: {error}")


@blueprint.errorhandler(ArgumentError)
def _argument(error: ArgumentError) -> Response:
    return bad_request(str(error))


@blueprint.get("/queries")
def list_queries() -> Response:
    return jsonify({"queries": [_summary(stored) for stored in registry().listed()]})


@blueprint.put("/queries/<name>")
@write_access
def put_query(name: str) -> Response:
    _check_name(name)
    if request.mimetype != SPARQL_QUERY:
        abort(unsupported_media_type(request.content_type, [SPARQL_QUERY]))
    check_utf8_charset([SPARQL_QUERY])
    params = url_params()
    r2s = single(params, "r2s", "give one R2S operator")
    mode = single(params, "mode", "give one mode") or "incremental"
    dialect = single(params, "dialect", "give one dialect")
    given = tuple(params.get("parameter", ()))
    replace = single(params, "replace", "give replace once") or "false"
    if replace not in ("true", "false"):
        abort(bad_request(f"replace={replace!r}: use true or false"))
    stored = registry().put(name, body_text("query"), r2s, mode, given, dialect=dialect, replace=replace == "true")
    response = jsonify(_details(stored))
    response.status_code = 201
    response.headers["Location"] = f"/queries/{name}"
    return response


@blueprint.get("/queries/<name>")
def get_query(name: str) -> Response:
    return jsonify(_details(registry().get(name)))


@blueprint.delete("/queries/<name>")
@write_access
def delete_query(name: str) -> Response:
    registry().delete(name)
    return Response(status=204)


@blueprint.post("/queries/<name>/instances")
@write_access
def post_instances(name: str) -> Response:
    if request.mimetype != "application/json":
        abort(unsupported_media_type(request.content_type, ["application/json"]))
    try:
        body = json.loads(body_text("JSON"))
    except ValueError as error:
        abort(bad_request(f"the body is not JSON: {error}"))
    specs = body if isinstance(body, list) else [body]
    if not specs:
        abort(bad_request("the list of instances is empty"))
    started = registry().add_instances(name, specs)
    response = jsonify({"instances": [_instance(name, instance, explain=False) for instance in started]})
    response.status_code = 201
    return response


@blueprint.get("/queries/<name>/<instance>")
def get_instance(name: str, instance: str) -> Response:
    stored = registry().get(name)
    found = stored.instances.get(instance)
    if found is None:
        abort(not_found(f"query {name!r} has no instance {instance!r}"))
    return jsonify(_instance(name, found, explain=True))


@blueprint.delete("/queries/<name>/<instance>")
@write_access
def delete_instance(name: str, instance: str) -> Response:
    registry().delete_instance(name, instance)
    return Response(status=204)


def _check_name(name: str) -> None:
    if not NAME.match(name):
        abort(bad_request(f"query name {name!r}: use up to 200 letters, digits, '_', '.', '~', '-', starting with a letter or digit"))


def _counts(query: ContinuousQuery) -> dict:
    counts = {"evaluations": query.evaluations, "emissions": query.emitted, "shed": query.shed}
    # Engine time on its events and advances, and push-to-emission latency: the console plots the
    # mean of each per interval.
    counts["latency"] = {"count": query.latency.count, "sum_ms": query.latency.sum * 1000}
    latency = query.emission_latency
    counts["emission_latency"] = {"count": latency.count, "sum_ms": latency.sum * 1000}
    if query.algebra.lateness_ms:
        counts["lateness_ms"] = query.algebra.lateness_ms
    if isinstance(query, DirectionalQuery):
        counts |= {"emit": query.emit, "next_anchor": query.anchors.first()}
    return counts


def _summary(stored: StoredQuery) -> dict:
    summary = {
        "name": stored.name,
        "status": stored.status,
        "r2s": stored.query.r2s if stored.query is not None else stored.r2s,
        "mode": stored.mode,
        "dialect": _dialect(stored),
        "parameters": list(stored.params),
        "instances": len(stored.instances),
    }
    if stored.reason is not None:
        summary["error"] = stored.reason
    if stored.query is not None:
        summary |= _counts(stored.query)
    summary["cache_errors"] = _cache_errors(stored.name)
    return summary


def _dialect(stored: StoredQuery) -> str:
    """The dialect the query reads in (``query.dialects``); for one that failed to start, the one asked for."""
    if stored.query is not None:
        return stored.query.dialect
    if stored.template is not None:
        return stored.template.algebra.dialect
    return stored.dialect or registry().engine.dialect


def _cache_errors(name: str) -> list[dict]:
    """The static caches of query ``name`` (of its instances' shared plans ``name#k`` and own
    plans ``name/instance`` too) whose last rebuild failed: each still serves its previous build,
    from store ``version``, until a rebuild succeeds and clears its entry."""
    return [
        {
            "query": stats["query"],
            "cache": stats["cache"],
            "error": stats["last_error"],
            "at": stats["last_error_at"],
            "failures": stats["failures"],
            "version": stats["version"],
        }
        for stats in endpoint().engine.cache_stats()
        if stats["last_error"] is not None and (stats["query"] == name or stats["query"].startswith((f"{name}#", f"{name}/")))
    ]


def _details(stored: StoredQuery) -> dict:
    details = _summary(stored) | {"text": stored.text, "error": stored.reason}
    # A failed query's plan is released: nothing to explain.
    running = stored.query is not None and stored.query.failure is None
    details["explain"] = endpoint().engine.explain(stored.name) if running else None
    details["plan"] = endpoint().engine.explain_tree(stored.name) if running else None
    instances = list(stored.instances.values())
    details["instances"] = [_instance(stored.name, i, explain=False) for i in instances]
    # How many window states the instances keep between them (runtime.sharing): one per stream
    # pattern when they were registered together, however many instances there are.
    # ``plans``: the operator graphs evaluating them (instances.py), one per batch created together.
    details["sharing"] = {
        "window_states": len({w.state_key for i in instances for w in i.query.windows}),
        "plans": len({id(i.query.evaluator.group) if i.query.unshared is None else id(i.query) for i in instances}),
    }
    return details


def _instance(name: str, instance: Instance, *, explain: bool) -> dict:
    query = instance.query
    result = {"name": instance.name, "query": query.name, "bindings": instance.bindings, "r2s": query.r2s} | _counts(query)
    result["status"] = query.status
    if query.failure is not None:
        result["error"] = str(query.failure)
    elif explain:
        result["explain"] = endpoint().engine.explain(query.name)
        result["plan"] = endpoint().engine.explain_tree(query.name)
    return result
