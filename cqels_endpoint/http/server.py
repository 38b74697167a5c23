"""Serving an ASGI app with uvicorn (httptools' C parser, uvloop): in the foreground for ``cqels
serve``, or in a thread for tests.

>>> from a2wsgi import WSGIMiddleware
>>> from flask import Flask
>>> app = Flask("demo"); _ = app.route("/")(lambda: "hi")
>>> base_url, stop = serve_in_thread(WSGIMiddleware(app))
>>> import urllib.request; urllib.request.urlopen(base_url + "/").read()
b'hi'
>>> stop()

Why uvicorn: ``benchmarks/http_servers.py`` served the same app with uvicorn, Hypercorn and Granian
(and the Flask app alone under waitress, the server before); the table is in docs/http.md.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from cqels_endpoint.http.asgi import ABORT_CONNECTION

log = logging.getLogger("cqels_endpoint.http")

_START_WAIT_S = 10.0
_STOP_WAIT_S = 10.0
# On SIGTERM or SIGINT the results streams end at once (``on_stop``); the answers under way then get
# this long to be sent before the connections still open are dropped. The whole stop stays under
# a second.
_DRAIN_S = 0.5
# The WebSocket messages read whole at least (uvicorn's default), whatever the app's body limit.
_WS_MAX_SIZE = 16 * 1024 * 1024

# uvicorn says at INFO what ``cqels serve`` says itself (listening, stopping).
logging.getLogger("uvicorn.error").setLevel(logging.WARNING)


class _Protocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, giving each request a way to drop its connection
    (``asgi.ABORT_CONNECTION``): closing waits for buffered output a stalled client never takes."""

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope[ABORT_CONNECTION] = self.transport.abort


class _WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the ``websockets`` library's, sans I/O), with the same way to
    drop the connection (a socket reading a query's emissions may be stuck in a write as well), and
    closing with 1001 when the server stops."""

    def shutdown(self) -> None:
        if self.handshake_complete and not self.close_sent and not self.transport.is_closing():
            # 1001 (going away), as a results stream ends when the server stops, whether or not the
            # query socket said so first: uvicorn would send 1012 (service restart).
            self.queue.put_nowait({"type": "websocket.disconnect", "code": 1001})
            self.conn.send_close(1001, "the server is stopping")
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True  # uvicorn's shutdown then only closes the transport
        super().shutdown()

    def handle_connect(self, event) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # none when the handshake was malformed (answered already)
        if scope is not None:
            scope[ABORT_CONNECTION] = self.transport.abort

    async def send(self, message: dict) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            # A refused handshake is complete once answered: uvicorn would log it as never completed.
            self.handshake_complete = True


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # ``serve`` handles the signals itself: uvicorn's handlers would raise them again on exit.
        yield


def _sockets(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` resolves to, all on one port (``port`` 0: a free
    one, chosen by the first). ``OSError`` when one cannot be bound (the port is taken, say)."""
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        ):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port or sockets[0].getsockname()[1], *address[2:]))
            sock.listen(2048)
            sock.set_inheritable(True)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}"


def _server(app, message_limit: int) -> _Server:
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http=_Protocol,
        ws=_WebSocketProtocol,
        # Every message the app may accept reaches it (it refuses one past its body limit with a
        # reply, the socket open); past this, the server closes the socket (1009) without reading on.
        ws_max_size=max(message_limit, _WS_MAX_SIZE),
        lifespan="off",
        log_config=None,  # the application's logging stays as it is
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=_DRAIN_S,
        backlog=2048,
    )
    return _Server(config)


def serve_in_thread(app, host: str = "127.0.0.1", port: int = 0, message_limit: int = 0) -> tuple[str, Callable[[], None]]:
    """Serve the ASGI ``app`` from a background thread on ``host:port`` (0: a free port);
    ``message_limit``: the app's body limit, which WebSocket messages up to are read whole.

    Returns ``(base_url, stop)``; ``stop()`` ends the server (its connections closed) and waits for it.
    """
    sockets = _sockets(host, port)
    server = _server(app, message_limit)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, name=f"uvicorn {host}:{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_WAIT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    stopped = threading.Event()

    def stop() -> None:
        if stopped.is_set():
            return
        stopped.set()
        server.should_exit = True
        thread.join(_STOP_WAIT_S)
        for sock in sockets:
            sock.close()
        _close(app)

    return _base_url(sockets[0]), stop


def serve(
    app,
    host: str,
    port: int,
    *,
    on_listen: Callable[[str], None] | None = None,
    on_stop: Callable[[], None] | None = None,
    message_limit: int = 0,
) -> None:
    """Serve the ASGI ``app`` in the foreground until SIGINT or SIGTERM, then return after closing.

    ``on_listen(base_url)`` is called once the socket listens (with the real port when 0 was asked);
    ``OSError`` before that when it cannot. On the first SIGINT or SIGTERM the server stops
    listening and ``on_stop()`` runs (it ends the open results streams, so their last words reach the
    clients); the answers under way get ``_DRAIN_S`` to be sent, then every connection is closed and
    this returns. A second signal ends the wait at once. ``message_limit``: as for ``serve_in_thread``.
    """
    sockets = _sockets(host, port)
    server = _server(app, message_limit)
    signalled: list[tuple[str, float]] = []  # the first signal's name and time

    def terminate(signum, frame) -> None:
        if signalled:
            server.force_exit = True
            return
        signalled.append((signal.Signals(signum).name, time.monotonic()))
        log.info("stopping on %s", signalled[0][0])
        server.should_exit = True
        if on_stop is not None:
            # In its own thread: a signal handler must not take the locks the loop's thread may hold.
            threading.Thread(target=on_stop, name="cqels-stop", daemon=True).start()

    previous = {signum: signal.signal(signum, terminate) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        if on_listen is not None:
            on_listen(_base_url(sockets[0]))
        server.run(sockets=sockets)
        if signalled:
            name, since = signalled[0]
            log.info("stopped %.3f s after %s: every connection closed", time.monotonic() - since, name)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for sock in sockets:
            sock.close()
        _close(app)


def _close(app) -> None:
    close = getattr(app, "close", None)
    if close is not None:
        close()
