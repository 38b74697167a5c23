"""JSON error responses: one named helper per status, and the handlers that map exceptions to them.

Every error body is ``{"error": message, "line": n | null, "column": n | null}``. Handlers either
``return`` a helper's response or, from deeper down, raise ``HttpError`` (the native routes of
``asgi.py`` too) or ``abort(helper(...))``. Exceptions the engine
raises on purpose map to a 4xx here; anything else is a bug: logged with its traceback, answered
with a JSON 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from cqels_endpoint.connectors.registry import UnknownConnector
from cqels_endpoint.connectors.specs import SpecError
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
    UnsupportedRequest,
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


def not_found(message: str) -> Response:
    return error_response(404, message)


def method_not_allowed(method: str, path: str, allowed: Iterable[str]) -> Response:
    allowed = sorted(allowed)
    return error_response(
        405, f"{method} is not allowed on {path}; use {', '.join(allowed)}", headers={"Allow": ", ".join(allowed)}
    )


def not_acceptable(accept: str | None, offered: Iterable[str]) -> Response:
    return error_response(406, not_acceptable_message(accept, offered))


def not_acceptable_message(accept: str | None, offered: Iterable[str]) -> str:
    return f"cannot answer in any type the request accepts ({accept!r}); available: {', '.join(offered)}"


def payload_too_large(limit_bytes: int | None) -> Response:
    return error_response(413, too_large_message(limit_bytes))


def too_large_message(limit_bytes: int | None, what: str = "request body") -> str:
    limit = f"{limit_bytes / (1024 * 1024):g} MiB" if limit_bytes else "the configured limit"
    return f"{what} larger than {limit}; raise --max-body-mb or send less"


def unsupported_media_type(content_type: str | None, accepted: Iterable[str]) -> Response:
    return error_response(415, unsupported_message(content_type, accepted))


def unsupported_message(content_type: str | None, accepted: Iterable[str]) -> str:
    given = f"Content-Type {content_type!r}" if content_type else "a request without Content-Type"
    return f"cannot read {given}; send one of: {', '.join(accepted)}"


def service_unavailable(message: str) -> Response:
    return error_response(503, message)


INTERNAL_ERROR = "internal server error; the server log has the details"



class HttpError(Exception):
    """A request refused with a JSON error, raised where the answer is decided: by the Flask routes
    (an error handler renders it) and by the native routes of ``asgi.py`` alike."""

    def __init__(
        self, status: int, message: str, *, line: int | None = None, column: int | None = None, headers: dict | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.line = line
        self.column = column
        self.headers = headers or {}

    def body(self) -> bytes:
        return json_body({"error": self.message, "line": self.line, "column": self.column})


def json_body(data: object) -> bytes:
    """``data`` as Flask's jsonify writes it (compact, ASCII, a final newline), so the native routes
    and Flask's answer byte for byte alike."""
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def _located(status: int) -> Callable[[Exception], HttpError]:
    return lambda error: HttpError(status, str(error), line=error.line, column=error.column)


def _plain(status: int) -> Callable[[Exception], HttpError]:
    return lambda error: HttpError(status, str(error))


def _store_failure(error: Exception) -> HttpError:
    # The store's own failures on a well-formed request (a full disk, a corrupt database) are the
    # server's problem, but still reported as JSON and logged.
    log.error("store failure: %s", error, exc_info=error)
    return HttpError(500, f"store failure: {error}")


#: The exceptions raised on purpose and their answers, most specific first. ``UpdateError`` is the
#: request's fault (CREATE of an existing graph, DROP of a missing one, a failed LOAD).
ERROR_ANSWERS: tuple[tuple[type[Exception], Callable[[Exception], HttpError]], ...] = (
    (HttpError, lambda error: error),
    (QuerySyntaxError, _located(400)),
    (RdfSyntaxError, _located(400)),
    # Only a store without a request engine raises it: pyoxigraph's refusal, where it says.
    (RequestSyntaxError, _located(400)),
    (UpdateError, _located(400)),
    (GraphNotFound, _plain(404)),
    (UnsupportedMediaType, _plain(415)),
    (RemoteAccessError, _plain(403)),
    (QueryTimeoutError, _plain(503)),
    (InvalidGraphName, _plain(400)),
    (UnsupportedRequest, _plain(501)),
    (StoreError, _store_failure),
    (SpecError, _plain(400)),
    (UnknownConnector, _plain(404)),
)


def http_error(error: Exception) -> HttpError:
    """The answer to ``error``: its entry of ``ERROR_ANSWERS``, else a logged JSON 500 (a bug)."""
    for kind, answer in ERROR_ANSWERS:
        if isinstance(error, kind):
            return answer(error)
    log.error("unhandled error while serving a request", exc_info=error)
    return HttpError(500, INTERNAL_ERROR)


def _rendered(error: HttpError) -> Response:
    return error_response(error.status, error.message, line=error.line, column=error.column, headers=error.headers)


def register_error_handlers(app: Flask) -> None:
    """Map the engine's exceptions (``ERROR_ANSWERS``) and werkzeug's HTTP errors to JSON responses."""
    for kind, _ in ERROR_ANSWERS:
        app.register_error_handler(kind, lambda error: _rendered(http_error(error)))

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
        return _rendered(http_error(error))
