"""A small HTTP client of a running ``cqels serve``, for the client-side commands of ``cqels``.

Plain ``urllib``, no proxies (the server is usually on loopback, where a proxy from the
environment must not sit in between). A server error comes back as ``ServerError`` carrying the
status and the ``error``/``line`` of the server's JSON body; a server that cannot be reached as
``ConnectionFailed``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from cqels_endpoint.errors import CqelsError

DEFAULT_URL = "http://127.0.0.1:7878"


class ConnectionFailed(CqelsError):
    """The server did not answer (not running, wrong URL, timeout)."""


class ServerError(CqelsError):
    """The server answered with an error status; ``message`` is its ``error``, ``line`` its line."""

    def __init__(self, status: int, message: str, line: int | None = None):
        super().__init__(f"the server answered {status}: {message}")
        self.status = status
        self.line = line


@dataclass(frozen=True)
class Client:
    """The server at ``url``; ``token``: the bearer token writes need, when the server has one."""

    url: str = DEFAULT_URL
    token: str | None = None
    timeout_s: float = 60.0

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> bytes:
        """The body of the answer to ``method path``; ``ServerError`` for any status >= 400."""
        with self._open(method, path, body, headers, params, self.timeout_s) as response:
            return response.read()

    def lines(self, path: str, headers: Mapping[str, str] | None = None) -> Iterator[bytes]:
        """The lines of a streamed answer to ``GET path`` as they arrive (no timeout: a results
        stream may stay idle between keep-alives for as long as the query emits nothing)."""
        with self._open("GET", path, None, headers, None, None) as response:
            yield from response

    def _open(self, method, path, body, headers, params, timeout_s):
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.url.rstrip('/')}{path}{query}", body, headers, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            return opener.open(request, timeout=timeout_s)
        except urllib.error.HTTPError as error:
            with error:
                raise _server_error(error.code, error.read()) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ConnectionFailed(f"cannot reach the server at {self.url}: {reason}") from None

    def json(self, method: str, path: str, **kwargs) -> dict:
        """``request`` for an answer in JSON."""
        return json.loads(self.request(method, path, **kwargs))


def stream_path(stream: str) -> str:
    """The path of ``POST /streams/{name}`` for a stream IRI or short name (percent-encoded whole).

    >>> stream_path("http://deri.org/streams/rfid")
    '/streams/http%3A%2F%2Fderi.org%2Fstreams%2Frfid'
    """
    return "/streams/" + urllib.parse.quote(stream, safe="")


def _server_error(status: int, body: bytes) -> ServerError:
    try:
        document = json.loads(body)
        return ServerError(status, str(document["error"]), document.get("line"))
    except (ValueError, KeyError, TypeError):
        return ServerError(status, body.decode("utf-8", "replace").strip() or "(no body)")
