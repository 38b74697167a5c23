"""JSON error responses: one named helper per status, and the handlers that map exceptions to them.

Every error body is ``{"error": message, "line": n | null, "column": n | null}``. Handlers either
``return`` a helper's response or, from deeper down, ``abort(helper(...))``. Exceptions the engine
raises on purpose map to a 4xx here; anything else is a bug: logged with its traceback, answered
with a JSON 500.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from cqels_endpoint.errors import (
    GraphNotFound,
    InvalidGraphName,
    QuerySyntaxError,
    QueryTimeoutError,
    RdfSyntaxError,
    RemoteAccessError,
    RequestSyntaxError,
    StoreError,
    UnsupportedMediaType,
    UpdateError,
)

log = logging.getLogger("cqels_endpoint.http")


def error_response(
    status: int, message: str, *, line: int | None = None, column: int | None = None, headers: dict | None = None
) -> Response:
    response = jsonify({"error": message, "line": line, "column": column})
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def bad_request(message: str, line: int | None = None, column: int | None = None) -> Response:
    return error_response(400, message, line=line, column=column)


def unauthorized(message: str, *, invalid_token: bool) -> Response:
    challenge = 'Bearer realm="cqels"' + (', error="invalid_token"' if invalid_token else "")
    return error_response(401, message, headers={"WWW-Authenticate": challenge})


def forbidden(message: str) -> Response:
    return error_response(403, message)


def not_found(message: str) -> Response:
    return error_response(404, message)


def method_not_allowed(method: str, path: str, allowed: Iterable[str]) -> Response:
    allowed = sorted(allowed)
    return error_response(
        405, f"{method} is not allowed on {path}; use {', '.join(allowed)}", headers={"Allow": ", ".join(allowed)}
    )


def not_acceptable(accept: str | None, offered: Iterable[str]) -> Response:
    return error_response(
        406, f"cannot answer in any type the request accepts ({accept!r}); available: {', '.join(offered)}"
    )


def payload_too_large(limit_bytes: int | None) -> Response:
    limit = f"{limit_bytes / (1024 * 1024):g} MiB" if limit_bytes else "the configured limit"
    return error_response(413, f"request body larger than {limit}; raise --max-body-mb or send less")


def unsupported_media_type(content_type: str | None, accepted: Iterable[str]) -> Response:
    given = f"Content-Type {content_type!r}" if content_type else "a request without Content-Type"
    return error_response(415, f"cannot read {given}; send one of: {', '.join(accepted)}")


def service_unavailable(message: str) -> Response:
    return error_response(503, message)


def internal_error() -> Response:
    return error_response(500, "internal server error; the server log has the details")


def register_error_handlers(app: Flask) -> None:
    """Map the engine's exceptions and werkzeug's HTTP errors to JSON responses."""

    @app.errorhandler(QuerySyntaxError)
    def _syntax(error: QuerySyntaxError) -> Response:
        return error_response(400, str(error), line=error.line, column=error.column)

    @app.errorhandler(RdfSyntaxError)
    def _rdf_syntax(error: RdfSyntaxError) -> Response:
        return error_response(400, str(error), line=error.line, column=error.column)

    @app.errorhandler(RequestSyntaxError)
    def _request_syntax(error: RequestSyntaxError) -> Response:
        # Only a store without a request engine raises it: pyoxigraph's refusal, where it says.
        return error_response(400, str(error), line=error.line, column=error.column)

    @app.errorhandler(UpdateError)
    def _update(error: UpdateError) -> Response:
        # CREATE of an existing graph, DROP of a missing one, a failed LOAD: the request's fault.
        return error_response(400, str(error), line=error.line, column=error.column)

    @app.errorhandler(GraphNotFound)
    def _graph_not_found(error: GraphNotFound) -> Response:
        return not_found(str(error))

    @app.errorhandler(UnsupportedMediaType)
    def _media_type(error: UnsupportedMediaType) -> Response:
        return error_response(415, str(error))

    @app.errorhandler(RemoteAccessError)
    def _remote(error: RemoteAccessError) -> Response:
        return forbidden(str(error))

    @app.errorhandler(QueryTimeoutError)
    def _timeout(error: QueryTimeoutError) -> Response:
        return service_unavailable(str(error))

    @app.errorhandler(InvalidGraphName)
    def _graph_name(error: InvalidGraphName) -> Response:
        return bad_request(str(error))

    @app.errorhandler(StoreError)
    def _store(error: StoreError) -> Response:
        # The store's own failures on a well-formed request (a full disk, a corrupt database) are
        # the server's problem, but still reported as JSON and logged.
        log.error("store failure: %s", error, exc_info=error)
        return error_response(500, f"store failure: {error}")

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException) -> Response:
        if error.response is not None:  # abort(helper(...)): already our JSON response
            return error.response
        if isinstance(error, RequestEntityTooLarge):
            return payload_too_large(app.config.get("MAX_CONTENT_LENGTH"))
        if error.code == 405:
            allowed = {m for m in (error.valid_methods or ()) if m != "OPTIONS"}
            return method_not_allowed(request.method, request.path, allowed)
        return error_response(error.code or 500, error.description or error.name)

    @app.errorhandler(Exception)
    def _bug(error: Exception) -> Response:
        log.exception("unhandled error while serving a request")
        return internal_error()
