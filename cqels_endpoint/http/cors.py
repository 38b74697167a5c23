"""Cross-origin requests from browsers (CORS), off unless origins are configured.

Without ``cors_origins`` the server sends no CORS header at all: a web page from another origin
cannot read its answers. With them (``cqels serve --cors-origin https://app.example.org``, or ``*``
for any origin), ``CorsMiddleware`` wraps the whole WSGI app (the fast path too) and

- answers a preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) itself:
  204 with the allowed methods and request headers for an allowed origin, a JSON 403 naming the
  origin otherwise;
- adds ``Access-Control-Allow-Origin`` (the request's origin, or ``*``) and
  ``Access-Control-Expose-Headers`` to the answers to an allowed origin, and ``Vary: Origin`` to
  every answer, so no cache hands one origin's answer to another.

Writes still need the bearer token: CORS only lets a page send it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

ALLOWED_METHODS = "GET, HEAD, POST, PUT, DELETE"
ALLOWED_HEADERS = "Authorization, Content-Type, Accept, Last-Event-ID"
# The headers of this server's answers a page may read besides the CORS-safelisted ones.
EXPOSED_HEADERS = "Location, ETag, Cqels-Replay-Gap, WWW-Authenticate"
PREFLIGHT_MAX_AGE_S = 600


class CorsMiddleware:
    """WSGI middleware answering CORS for ``origins`` (``"*"`` among them: any origin)."""

    def __init__(self, app: Callable, origins: Iterable[str]):
        self._app = app
        self._origins = frozenset(origins)

    def allowed(self, origin: str) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for ``origin``, or None when it is not allowed."""
        if "*" in self._origins:
            return "*"
        return origin if origin.rstrip("/") in self._origins else None

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        origin = environ.get("HTTP_ORIGIN")
        allow = None if origin is None else self.allowed(origin)
        if origin is not None and environ.get("REQUEST_METHOD") == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ:
            return self._preflight(origin, allow, start_response)

        def add_headers(status: str, headers: list[tuple[str, str]], exc_info=None):
            headers = [*headers, ("Vary", "Origin")]
            if allow is not None:
                headers += [("Access-Control-Allow-Origin", allow), ("Access-Control-Expose-Headers", EXPOSED_HEADERS)]
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        return self._app(environ, add_headers)

    def _preflight(self, origin: str, allow: str | None, start_response: Callable) -> list[bytes]:
        if allow is None:
            message = f"origin {origin!r} may not call this server; it allows {', '.join(sorted(self._origins))} (--cors-origin)"
            body = json.dumps({"error": message, "line": None, "column": None}).encode()
            start_response("403 FORBIDDEN", [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Vary", "Origin"),
            ])
            return [body]
        start_response("204 NO CONTENT", [
            ("Access-Control-Allow-Origin", allow),
            ("Access-Control-Allow-Methods", ALLOWED_METHODS),
            ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
            ("Access-Control-Max-Age", str(PREFLIGHT_MAX_AGE_S)),
            ("Vary", "Origin"),
        ])
        return []
