"""Stored continuous queries: ``/queries``, ``/queries/{name}``, ``/queries/{name}/instances``.

| path | verbs | what |
|---|---|---|
| ``/queries`` | GET | every stored query: name, status, R2S, mode, parameters, instances, emissions |
| ``/queries/{name}`` | PUT | store and start a query: body ``application/sparql-query``, ``?r2s=``, ``?mode=``; 201, 409 if taken |
| ``/queries/{name}`` | GET | its text, R2S, mode, status, parameters, instances, ``explain`` with counters, emission counts |
| ``/queries/{name}`` | DELETE | stop it and every instance; 204 |
| ``/queries/{name}/instances`` | POST | instances of a template (below); 201 |
| ``/queries/{name}/{instance}`` | GET, DELETE | one instance |

**Parameters.** A query declares parameters in comment lines of its text, ``# @param ?var`` (several
per line allowed, ``$var`` too); a comment is ignored by SPARQL, so the text stays a plain query. A
query with parameters is a *template*: it is checked (parsed and planned) but not started. ``POST
/queries/{name}/instances`` with ``{"bindings": {"var": {"type": "uri", "value": …}}, "name": …}``
(SPARQL 1.1 JSON result terms; ``name`` optional) — or a JSON list of such objects, created all or
none — starts one query per object: the template with its parameters pre-bound by a one-row
``VALUES`` block at the top of its WHERE (SPARQL's own pre-binding: the group joins the row with the
rest, so the results are those of substituting the terms wherever SPARQL defines substitution;
a ``TRIPLES n`` window is not SPARQL and counts the triples matching the *template's* pattern, so
an instance sees what is among the last n of anybody, not the last n of its own terms).
Every parameter must be bound, nothing else may be. An instance is named ``{name}/{instance}``
(``instance`` the given name or the next number) in the engine, its results and ``/metrics``.

The instances of one template created together (no event in between) are evaluated by one
operator graph (``cqels_endpoint.instances``): one window state and one window buffer per stream
pattern, one join index per input, each static cache built once, and a table of the instances'
parameter rows that the stream triples probe; ``explain`` of an instance shows that shared plan,
or why its template needs a plan per instance.

**Persistence.** Unless the server keeps its store in memory, the stored queries and instances are
written to ``queries.json`` in the data directory after every change (a temporary file renamed over
the old one: a crash leaves the old or the new file, never half of one), and ``create_app`` starts
them again before the server accepts a request. A stored query that no longer registers (after an
upgrade, say) is kept with status ``failed`` and its error, never dropped.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox
from flask import Blueprint, Flask, Response, abort, current_app, jsonify, request

from cqels_endpoint.engine import ContinuousQuery, Engine, UnknownQueryError
from cqels_endpoint.errors import ArgumentError, CqelsError, PlanError, QuerySyntaxError
from cqels_endpoint.http.auth import write_access
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import bad_request, error_response, not_found, unsupported_media_type
from cqels_endpoint.http.params import body_text, check_utf8_charset, single, url_params
from cqels_endpoint.http.query import SPARQL_QUERY
from cqels_endpoint.query.parser import parse_query

log = logging.getLogger("cqels_endpoint.http")

blueprint = Blueprint("queries", __name__)

EXTENSION = "cqels_queries"
FILE_NAME = "queries.json"
FILE_FORMAT = 1
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.~-]{0,199}\Z")
# Names under /queries/{name}/ that are paths of their own, not instances.
_RESERVED = frozenset({"instances", "results"})
_PARAM_LINE = re.compile(r"^[ \t]*#[ \t]*@param\b(.*)$", re.MULTILINE)
_PARAM = re.compile(r"[?$]([A-Za-z_][A-Za-z0-9_]*)\Z")


# --------------------------------------------------------------------------- parameters


def parameters(text: str) -> tuple[str, ...]:
    """The parameters ``text`` declares in ``# @param ?var`` lines, in order.

    >>> parameters("# @param ?who $room\\nSELECT * WHERE { STREAM <http://e/s> [NOW] { ?who <http://e/p> ?room } }")
    ('who', 'room')
    """
    found: list[str] = []
    for line in _PARAM_LINE.finditer(text):
        offset = line.start(1)
        tokens = list(re.finditer(r"\S+", line.group(1)))
        if not tokens:
            raise QuerySyntaxError.at("@param names no variable: write '# @param ?name'", text, line.start(), line.end())
        for token in tokens:
            start, end = offset + token.start(), offset + token.end()
            match = _PARAM.match(token.group())
            if match is None:
                msg = f"@param takes variables like ?name, not {token.group()!r}"
                raise QuerySyntaxError.at(msg, text, start, end)
            if match.group(1) in found:
                raise QuerySyntaxError.at(f"parameter ?{match.group(1)} is declared twice", text, start, end)
            found.append(match.group(1))
    return tuple(found)


def _where_start(text: str) -> int:
    """The offset of the ``{`` opening the WHERE of ``text`` (which parses)."""
    return parse_query(text).form.where.span.start


def _check_used(text: str, params: tuple[str, ...], where: int) -> None:
    """Every parameter must occur in the WHERE: pre-binding one that does not would multiply
    nothing and silently mean nothing."""
    body = text[where:]
    for param in params:
        if re.search(rf"[?$]{param}(?![A-Za-z0-9_])", body) is None:
            declared = re.search(rf"@param\b[^\n]*?([?$]{param})(?![A-Za-z0-9_])", text)
            start = declared.start(1) if declared else 0
            raise QuerySyntaxError.at(f"parameter ?{param} does not occur in the WHERE clause", text, start, start + len(param) + 1)


def bound_text(text: str, where: int, terms: dict[str, ox.NamedNode | ox.Literal]) -> str:
    """``text`` with ``terms`` pre-bound: a one-row VALUES first in the group of the WHERE,
    inserted on the same line so that the positions of the template's errors stay meaningful."""
    return _with_values(text, where, tuple(terms), "(" + " ".join(str(term) for term in terms.values()) + ")")[0]


def instances_text(text: str, where: int, params: tuple[str, ...]) -> tuple[str, int]:
    """``text`` with an empty VALUES of ``params`` where ``bound_text`` puts the row, and the
    VALUES' offset: the text of the plan the instances share (``Engine.register_instances``)."""
    return _with_values(text, where, params, "")


def _with_values(text: str, where: int, params: tuple[str, ...], rows: str) -> tuple[str, int]:
    """``text`` with ``VALUES (?params) { rows }`` first in the group opening at ``where``, and its offset."""
    variables = " ".join(f"?{name}" for name in params)
    return f"{text[: where + 1]} VALUES ({variables}) {{ {rows} }} {text[where + 1 :]}", where + 2


def term_from_json(param: str, value: object) -> ox.NamedNode | ox.Literal:
    """A SPARQL 1.1 JSON result term (``uri`` or ``literal``); ``ValueError`` naming ``param`` otherwise."""
    if not isinstance(value, dict) or not isinstance(value.get("value"), str):
        msg = f'the binding of ?{param} must be an object like {{"type": "uri", "value": "http://…"}}, not {value!r}'
        raise ArgumentError(msg)
    kind, text = value.get("type"), value["value"]
    if kind == "uri":
        try:
            return ox.NamedNode(text)
        except ValueError as error:
            raise ArgumentError(f"?{param}: {text!r} is not an IRI ({error})") from None
    if kind in ("literal", "typed-literal"):
        language, datatype = value.get("xml:lang"), value.get("datatype")
        try:
            if language is not None:
                return ox.Literal(text, language=language)
            return ox.Literal(text, datatype=None if datatype is None else ox.NamedNode(datatype))
        except (ValueError, TypeError) as error:
            raise ArgumentError(f"?{param}: bad literal {value!r} ({error})") from None
    if kind == "bnode":
        raise ArgumentError(f"?{param}: a blank node cannot be pre-bound (it would be a new node in the query); use an IRI")
    raise ArgumentError(f'?{param}: unknown term type {kind!r}; use "uri" or "literal"')


# --------------------------------------------------------------------------- the registry


@dataclass(eq=False)
class Instance:
    """One instance of a template: its short name, the bindings as given (JSON) and its query."""

    name: str
    bindings: dict[str, dict]
    query: ContinuousQuery


@dataclass(eq=False)
class StoredQuery:
    """A query stored under ``name``: started (``query``), a template (``params``), or ``error``
    when it could not be started again on restore."""

    name: str
    text: str
    r2s: str | None  # as requested; None: the REGISTER keyword, else ISTREAM
    mode: str
    params: tuple[str, ...]
    query: ContinuousQuery | None = None
    instances: dict[str, Instance] = field(default_factory=dict)
    next_number: int = 1
    error: str | None = None
    # Instances read back from the file but not started (the template failed): kept for the file.
    dormant: list[dict] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.error is not None:
            return "failed"
        return "template" if self.params else "running"


class QueryRegistry:
    """The stored queries of one app, in the engine and (unless ``path`` is None) on disk."""

    def __init__(self, engine: Engine, path: Path | None) -> None:
        self.engine = engine
        self.path = path
        self.stored: dict[str, StoredQuery] = {}
        # Serialises changes, so that the file is written in the order the changes were made.
        self._lock = threading.RLock()

    def put(self, name: str, text: str, r2s: str | None, mode: str, *, save: bool = True) -> StoredQuery:
        with self._lock:
            if name in self.stored or name in self.engine.queries:
                raise _Conflict(f"a query named {name!r} is already registered: DELETE /queries/{name} first")
            params = parameters(text)
            if params:
                _check_used(text, params, _where_start(text))
                self.engine.check(text, r2s=r2s, mode=mode)
                stored = StoredQuery(name, text, r2s, mode, params)
            else:
                stored = StoredQuery(name, text, r2s, mode, params, query=self.engine.register(text, name, r2s, mode))
            self.stored[name] = stored
            if save:
                self._save()
            return stored

    def delete(self, name: str) -> None:
        with self._lock:
            stored = self.get(name)
            for instance in stored.instances.values():
                self.engine.unregister(instance.query.name)
            if stored.query is not None:
                self.engine.unregister(name)
            del self.stored[name]
            self._save()

    def get(self, name: str) -> StoredQuery:
        stored = self.stored.get(name)
        if stored is None:
            raise UnknownQueryError(f"no query is stored as {name!r}; GET /queries lists them")
        return stored

    def add_instances(self, name: str, specs: list[dict], *, save: bool = True) -> list[Instance]:
        """Starts one instance per ``{"bindings": …, "name": …}``, all or none."""
        with self._lock:
            stored = self.get(name)
            if stored.error is not None:
                raise _Conflict(f"query {name!r} failed to start ({stored.error}); store it again")
            if not stored.params:
                raise ArgumentError(f"query {name!r} declares no parameters ('# @param ?var' lines): it has no instances")
            where = _where_start(stored.text)
            planned: list[tuple[str, dict, dict, str]] = []
            number = stored.next_number
            for index, spec in enumerate(specs):
                where_in = f"instance {index}: " if len(specs) > 1 else ""
                short, number = self._instance_name(stored, spec, number, {p[0] for p in planned}, where_in)
                bindings = spec.get("bindings")
                if not isinstance(bindings, dict):
                    raise ArgumentError(f'{where_in}give "bindings": {{"var": {{"type": "uri", "value": …}}}}')
                missing = [p for p in stored.params if p not in bindings]
                if missing:
                    raise ArgumentError(f"{where_in}parameters not bound: {', '.join('?' + p for p in missing)}")
                extra = [v for v in bindings if v not in stored.params]
                if extra:
                    msg = f"{where_in}not parameters of {name!r}: {', '.join('?' + v for v in extra)} (it declares {', '.join('?' + p for p in stored.params)})"
                    raise ArgumentError(msg)
                try:
                    terms = {p: term_from_json(p, bindings[p]) for p in stored.params}
                except ValueError as error:
                    raise ArgumentError(f"{where_in}{error}") from None
                planned.append((short, {p: bindings[p] for p in stored.params}, terms, bound_text(stored.text, where, terms)))
            shared_text, values_at = instances_text(stored.text, where, stored.params)
            queries = self.engine.register_instances(
                shared_text,
                values_at,
                [(f"{name}/{short}", terms, text) for short, _bindings, terms, text in planned],
                stored.r2s,
                stored.mode,
                group=name,
            )
            for (short, bindings, _terms, _text), query in zip(planned, queries):
                stored.instances[short] = Instance(short, bindings, query)
            started = [stored.instances[short] for short, *_ in planned]
            stored.next_number = number
            if save:
                self._save()
            return started

    def _instance_name(self, stored: StoredQuery, spec: object, number: int, taken: set, where_in: str) -> tuple[str, int]:
        if not isinstance(spec, dict):
            raise ArgumentError(f'{where_in}an instance is a JSON object {{"bindings": {{…}}, "name": …}}, not {spec!r}')
        given = spec.get("name")
        if given is None:
            while str(number) in stored.instances or str(number) in taken:
                number += 1
            return str(number), number + 1
        if not isinstance(given, str) or not _NAME.match(given) or given in _RESERVED:
            raise ArgumentError(f"{where_in}instance name {given!r}: use letters, digits, '_', '.', '~', '-' (not 'instances' or 'results')")
        if given in stored.instances or given in taken:
            raise _Conflict(f"{where_in}query {stored.name!r} already has an instance named {given!r}")
        return given, number

    def delete_instance(self, name: str, short: str) -> None:
        with self._lock:
            stored = self.get(name)
            instance = stored.instances.get(short)
            if instance is None:
                raise UnknownQueryError(f"query {name!r} has no instance {short!r}")
            self.engine.unregister(instance.query.name)
            del stored.instances[short]
            self._save()

    def close(self) -> None:
        """Stops every stored query (the file keeps them)."""
        with self._lock:
            for stored in self.stored.values():
                for instance in stored.instances.values():
                    self.engine.unregister(instance.query.name)
                if stored.query is not None:
                    self.engine.unregister(stored.name)
            self.stored.clear()

    # ------------------------------------------------------------------ the file

    def restore(self) -> int:
        """Starts the queries and instances of the file again; returns how many queries it held."""
        if self.path is None or not self.path.exists():
            return 0
        try:
            document = json.loads(self.path.read_text("utf-8"))
            entries = document["queries"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            msg = f"cannot read the stored queries in {self.path}: {error}; fix or move the file"
            raise CqelsError(msg) from error
        with self._lock:
            for entry in entries:
                self._restore(entry)
        return len(entries)

    def _restore(self, entry: dict) -> None:
        name, instances = entry["name"], entry.get("instances", [])
        try:
            stored = self.put(name, entry["text"], entry.get("r2s"), entry.get("mode", "incremental"), save=False)
            stored.next_number = entry.get("next_instance", 1)
            if instances:
                self.add_instances(name, instances, save=False)
        except (CqelsError, ValueError) as error:
            log.error("stored query %r did not start again: %s; kept as failed", name, error)
            stored = self.stored.pop(name, None)
            if stored is not None:  # the template started, an instance did not: none of it runs
                self._unregister_all(stored)
            failed = StoredQuery(name, entry["text"], entry.get("r2s"), entry.get("mode", "incremental"), (), error=str(error))
            failed.dormant, failed.next_number = instances, entry.get("next_instance", 1)
            self.stored[name] = failed

    def _unregister_all(self, stored: StoredQuery) -> None:
        for instance in stored.instances.values():
            self.engine.unregister(instance.query.name)
        if stored.query is not None:
            self.engine.unregister(stored.name)

    def _save(self) -> None:
        if self.path is None:
            return
        entries = []
        for stored in self.stored.values():
            instances = [{"name": i.name, "bindings": i.bindings} for i in stored.instances.values()] or stored.dormant
            entries.append({
                "name": stored.name, "text": stored.text, "r2s": stored.r2s, "mode": stored.mode,
                "next_instance": stored.next_number, "instances": instances,
            })
        data = json.dumps({"format": FILE_FORMAT, "queries": entries}, ensure_ascii=False, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        # The rename itself is durable only once the directory is synced.
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class _Conflict(CqelsError):
    """The name is taken: 409."""


def install(app: Flask, engine: Engine, path: Path | None) -> QueryRegistry:
    """Gives ``app`` its query registry and restores the stored queries (before any request)."""
    registry = QueryRegistry(engine, path)
    registry.restore()
    app.extensions[EXTENSION] = registry
    return registry


def registry(app: Flask | None = None) -> QueryRegistry:
    return (app or current_app).extensions[EXTENSION]


# --------------------------------------------------------------------------- the views


@blueprint.errorhandler(_Conflict)
def _conflict(error: _Conflict) -> Response:
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
    return jsonify({"queries": [_summary(stored) for stored in list(registry().stored.values())]})


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
    stored = registry().put(name, body_text("query"), r2s, mode)
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
    if not _NAME.match(name):
        abort(bad_request(f"query name {name!r}: use up to 200 letters, digits, '_', '.', '~', '-', starting with a letter or digit"))


def _counts(query: ContinuousQuery) -> dict:
    return {"evaluations": query.evaluations, "emissions": query.emitted}


def _summary(stored: StoredQuery) -> dict:
    summary = {
        "name": stored.name,
        "status": stored.status,
        "r2s": stored.query.r2s if stored.query is not None else stored.r2s,
        "mode": stored.mode,
        "parameters": list(stored.params),
        "instances": len(stored.instances),
    }
    if stored.query is not None:
        summary |= _counts(stored.query)
    return summary


def _details(stored: StoredQuery) -> dict:
    details = _summary(stored) | {"text": stored.text, "error": stored.error}
    details["explain"] = None if stored.query is None else endpoint().engine.explain(stored.name)
    instances = list(stored.instances.values())
    details["instances"] = [_instance(stored.name, i, explain=False) for i in instances]
    # How many window states the instances keep between them (runtime.sharing): one per stream
    # pattern when they were registered together, however many instances there are.
    # ``plans``: the operator graphs evaluating them (instances.py), one per batch created together.
    details["sharing"] = {
        "window_states": len({w.state_key for i in instances for w in i.query.windows}),
        "plans": len({id(getattr(i.query.evaluator, "group", i.query.evaluator)) for i in instances}),
    }
    return details


def _instance(name: str, instance: Instance, *, explain: bool) -> dict:
    query = instance.query
    result = {"name": instance.name, "query": query.name, "bindings": instance.bindings, "r2s": query.r2s} | _counts(query)
    if explain:
        result["explain"] = endpoint().engine.explain(query.name)
    return result
