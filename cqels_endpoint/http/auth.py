"""Bearer-token protection of writes, and read-only mode; reads stay open.

With ``read_only`` configured, every write is refused with 403 (whatever the token). With
``auth_token`` configured, every write (``/update``, ``/store`` PUT/POST/DELETE, stream
pushes, query registration and deletion, instances) needs ``Authorization: Bearer <token>``;
otherwise 401 with a ``WWW-Authenticate`` challenge (RFC 6750), before the view looks anything up
(so a missing query or graph is not revealed). Tokens are compared in constant time.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Callable

from flask import request

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.http.errors import HttpError

READ_ONLY_MESSAGE = (
    "this server is read-only (started with --read-only): {method} {path} would write and is refused; "
    "queries, Graph Store reads, GET /streams, /queries and results streams still work"
)


def denial_reason(authorization: str | None, token: str | None) -> tuple[str, bool] | None:
    """Why a request with this ``Authorization`` header may not write, and whether its token is
    invalid (rather than missing); None when it may."""
    if token is None:
        return None
    scheme, _, given = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return "this server requires 'Authorization: Bearer <token>' for writes", False
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return "the bearer token is wrong", True
    return None


def write_refusal(config: ServerConfig, method: str, path: str, authorization: str | None) -> HttpError | None:
    """Why a write request (``method path`` with this ``Authorization``) is refused: 403 on a
    read-only server, 401 with its challenge without the token; None when it may write."""
    if config.read_only:
        return HttpError(403, READ_ONLY_MESSAGE.format(method=method, path=path))
    reason = denial_reason(authorization, config.auth_token)
    if reason is None:
        return None
    message, invalid_token = reason
    challenge = 'Bearer realm="cqels"' + (', error="invalid_token"' if invalid_token else "")
    return HttpError(401, message, headers={"WWW-Authenticate": challenge})


def require_write_access() -> None:
    """Raise the 403 or 401 (``write_refusal``) unless the current request may write."""
    refused = write_refusal(endpoint().config, request.method, request.path, request.headers.get("Authorization"))
    if refused is not None:
        raise refused


def write_access(view: Callable) -> Callable:
    """Decorate a view that only writes: the token is checked before the body is read."""

    @functools.wraps(view)
    def guarded(*args, **kwargs):
        require_write_access()
        return view(*args, **kwargs)

    return guarded
