"""A real WebSocket publisher for the source tests (what TripleWave is to a WebSocket client): a
``websockets`` server in a thread on a free port that sends every connected client the messages
given to ``send``, and can be stopped and started again on the same port mid-stream."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from websockets.sync.server import Server, ServerConnection, serve


class Publisher:
    """``url`` is where clients connect; ``clients`` the connections open now; ``requests`` the
    handshake requests seen (their headers, for authentication tests)."""

    def __init__(self, check: Callable[[object], int | None] | None = None):
        self.port = _free_port()
        self.url = f"ws://127.0.0.1:{self.port}/stream"
        self.clients: list[ServerConnection] = []
        self.requests: list = []
        self._check = check
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._connected = threading.Condition()

    def start(self) -> Publisher:
        self._server = serve(self._handle, "127.0.0.1", self.port, process_request=self._process_request)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Closes every connection and stops listening (``start`` listens again on the same port)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            self._thread.join(10)
        with self._connected:
            self.clients.clear()

    def wait_for_client(self, count: int = 1, timeout: float = 10) -> None:
        with self._connected:
            if not self._connected.wait_for(lambda: len(self.clients) >= count, timeout):
                raise TimeoutError(f"{len(self.clients)} clients connected, not {count}")

    def send(self, message: str | bytes) -> None:
        with self._connected:
            clients = list(self.clients)
        for client in clients:
            client.send(message)

    def _process_request(self, connection: ServerConnection, request) -> object:
        self.requests.append(request)
        status = self._check(request) if self._check is not None else None
        return None if status is None else connection.respond(status, "refused\n")

    def _handle(self, connection: ServerConnection) -> None:
        with self._connected:
            self.clients.append(connection)
            self._connected.notify_all()
        try:
            connection.wait_closed()  # a publisher only sends; ``send`` does, from the test's thread
        finally:
            with self._connected:
                if connection in self.clients:
                    self.clients.remove(connection)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
