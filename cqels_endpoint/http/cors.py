"""Cross-origin requests from browsers (CORS), off unless origins are configured.

Without ``cors_origins`` the server sends no CORS header at all: a web page from another origin
cannot read its answers. With them (``cqels serve --cors-origin https://app.example.org``, or ``*``
for any origin), ``CorsMiddleware`` wraps the whole ASGI app (``asgi.py``'s native routes and Flask's) and

- answers a preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) itself:
  204 with the allowed methods and request headers for an allowed origin, a JSON 403 naming the
  origin otherwise;
- adds ``Access-Control-Allow-Origin`` (the request's origin, or ``*``) and
  ``Access-Control-Expose-Headers`` to the answers to an allowed origin, and ``Vary: Origin`` to
  every answer, so no cache hands one origin's answer to another.

Writes still need the bearer token: CORS only lets a page send it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cqels_endpoint.http.errors import HttpError

ALLOWED_METHODS = "GET, HEAD, POST, PUT, DELETE"
ALLOWED_HEADERS = "Authorization, Content-Type, Accept, Last-Event-ID"
# The headers of this server's answers a page may read besides the CORS-safelisted ones.
EXPOSED_HEADERS = "Location, ETag, Cqels-Replay-Gap, WWW-Authenticate"
PREFLIGHT_MAX_AGE_S = 600


class CorsMiddleware:
    """ASGI middleware answering CORS for ``origins`` (``"*"`` among them: any origin) in front of ``app``."""

    def __init__(self, app: Callable, origins: Iterable[str]):
        self._app = app
        self._origins = frozenset(origins)

    def allowed(self, origin: str) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for ``origin``, or None when it is not allowed."""
        if "*" in self._origins:
            return "*"
        return origin if origin.rstrip("/") in self._origins else None

    def close(self) -> None:
        self._app.close()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self._app(scope, receive, send)
        headers = dict(scope["headers"])
        origin = headers.get(b"origin")
        origin = None if origin is None else origin.decode("latin-1")
        allow = None if origin is None else self.allowed(origin)
        if origin is not None and scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            return await self._preflight(origin, allow, send)
        added = [(b"vary", b"Origin")]
        if allow is not None:
            added += [(b"access-control-allow-origin", allow.encode()), (b"access-control-expose-headers", EXPOSED_HEADERS.encode())]

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *added]}
            await send(message)

        await self._app(scope, receive, send_with_headers)

    async def _preflight(self, origin: str, allow: str | None, send: Callable) -> None:
        if allow is None:
            message = f"origin {origin!r} may not call this server; it allows {', '.join(sorted(self._origins))} (--cors-origin)"
            body = HttpError(403, message).body()
            await send({"type": "http.response.start", "status": 403, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"vary", b"Origin"),
            ]})
            return await send({"type": "http.response.body", "body": body})
        await send({"type": "http.response.start", "status": 204, "headers": [
            (b"access-control-allow-origin", allow.encode()),
            (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
            (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
            (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode()),
            (b"vary", b"Origin"),
        ]})
        await send({"type": "http.response.body", "body": b""})
