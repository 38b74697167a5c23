"""A WebSocket client source: connects to a remote publisher (``ws://`` or ``wss://``, as TripleWave
serves RDF streams) and pushes each message it sends as one batch (``base.Source``), reconnecting
with backoff when the publisher goes away.

A ``token_env`` is sent as ``Authorization: Bearer <token>``, a ``username`` with ``password_env``
as HTTP basic authentication. Messages are read one at a time: while the engine takes one, the
client library holds at most ``_QUEUED`` more and TCP holds back the publisher (no unbounded
buffer). A message larger than the server's body limit ends the connection (close code 1009), which
is retried like any other.
"""

from __future__ import annotations

import base64
import ssl

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from cqels_endpoint.config import DEFAULT_MAX_BODY_MB
from cqels_endpoint.connectors.base import ConnectionLost, ConnectorFailed, Source
from cqels_endpoint.connectors.specs import SourceSpec, Tls

_QUEUED = 16
_READ_S = 0.2  # how often a read gives the thread the chance to see ``stopping``
_MAX_MESSAGE = int(DEFAULT_MAX_BODY_MB * 1024 * 1024)


class WebSocketSource(Source):
    """A source reading ``spec.address`` (module docstring)."""

    def __init__(self, spec: SourceSpec, engine, stream: str):
        super().__init__(spec, engine, stream)
        self._socket: ClientConnection | None = None

    def _serve(self) -> None:
        spec = self.spec
        headers = {}
        token = self.secret(spec.token_env)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        user = spec.username if spec.username is not None else self.secret(spec.username_env)
        if user is not None:
            password = self.secret(spec.password_env) or ""
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        try:
            opened = connect(
                spec.address, additional_headers=headers, ssl=ssl_context(spec.tls) if spec.secure else None,
                open_timeout=10, ping_interval=spec.keepalive_s or None, max_size=_MAX_MESSAGE, max_queue=_QUEUED,
                proxy=None,
            )
        except InvalidStatus as error:
            raise ConnectionLost(f"the publisher refused the connection: HTTP {error.response.status_code}") from None
        except InvalidHandshake as error:
            raise ConnectionLost(f"no WebSocket handshake with {spec.address}: {error}") from None
        with opened as socket:
            self._socket = socket
            try:
                self.connected()
                while not self.stopping.is_set():
                    try:
                        message = socket.recv(timeout=_READ_S)
                    except TimeoutError:
                        continue
                    self.deliver(message.encode() if isinstance(message, str) else message, spec.address)
            except ConnectionClosed as closed:
                if not self.stopping.is_set():
                    raise ConnectionLost(f"the publisher closed the connection ({_close_reason(closed)})") from None
            finally:
                self._socket = None

    def _interrupt(self) -> None:
        socket = self._socket
        if socket is not None:
            socket.close()


def ssl_context(tls: Tls | None) -> ssl.SSLContext:
    """The client TLS context of ``tls`` (None: the system's authorities, host names checked)."""
    tls = tls or Tls()
    try:
        context = ssl.create_default_context(cafile=tls.ca)
        if tls.cert is not None:
            context.load_cert_chain(tls.cert, tls.key)
    except (OSError, ssl.SSLError) as error:
        raise ConnectorFailed(f"cannot read the TLS files: {error}") from None
    if tls.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _close_reason(closed: ConnectionClosed) -> str:
    received = closed.rcvd
    if received is None:
        return "no close frame"
    return f"code {received.code}" + (f": {received.reason}" if received.reason else "")
