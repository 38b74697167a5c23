"""Serving the app with waitress: in the foreground for ``cqels serve``, or in a thread for tests.

>>> from flask import Flask
>>> app = Flask("demo"); _ = app.route("/")(lambda: "hi")
>>> base_url, stop = serve_in_thread(app)
>>> import urllib.request; urllib.request.urlopen(base_url + "/").read()
b'hi'
>>> stop()
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

from waitress import trigger, wasyncore
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server
from waitress.task import WSGITask

from cqels_endpoint.config import DEFAULT_THREADS

log = logging.getLogger("cqels_endpoint.http")

_STOP_WAIT_S = 10.0
# On SIGTERM or SIGINT: how long the answers under way get to end and be sent before every
# connection is closed, and how long the request threads then get to notice. The results streams
# end at once (``on_stop``), so these bound only slow one-shot requests; the whole stop stays
# under a second.
_DRAIN_S = 0.5
_THREADS_EXIT_S = 0.2

#: WSGI environ key of a callable that closes the request's connection from any thread. A results
#: stream whose client stopped reading uses it: waitress's task thread then waits, inside a write,
#: for the client to take its output and would wait forever; closing the connection wakes it.
CLOSE_CONNECTION = "cqels.close_connection"


class _Task(WSGITask):
    def get_environment(self) -> dict:
        environ = super().get_environment()
        environ[CLOSE_CONNECTION] = self._close_connection
        return environ

    def _close_connection(self) -> None:
        channel = self.channel

        def close() -> None:
            # In the server's loop thread, where its sockets may be closed; a no-op when gone already.
            if channel.connected:
                channel.handle_close()

        channel.server.trigger.pull_trigger(close)


class _Channel(HTTPChannel):
    task_class = _Task


# waitress's own cap on request bodies (its default). It answers a body over its cap with a plain
# text 413 before the app runs; below it, the app's limit (Flask's MAX_CONTENT_LENGTH) answers
# with a JSON 413. So waitress's cap is never set below the app's.
_WAITRESS_BODY_CAP = 1 << 30


def _create(app, host: str, port: int, max_body_bytes: int | None, threads: int):
    server = create_server(
        app,
        host=host,
        port=port,
        threads=threads,
        max_request_body_size=max(max_body_bytes or 0, _WAITRESS_BODY_CAP),
        # Keeps reading a connection while its request runs, so a client that hangs up is noticed
        # (and ``waitress.client_disconnected`` in the environ says so): an idle results stream
        # polls it to free its thread without waiting for its next write to fail.
        channel_request_lookahead=1,
        # A client that stops reading makes the writing thread wait once this much output is
        # buffered for it (waitress's default is 16 MB): a stalled results stream then fills its
        # subscriber queue and is dropped after 1 MB, not 16. Larger responses stream at the
        # client's pace.
        outbuf_high_watermark=1 << 20,
    )
    for listener in _listeners(server):
        listener.channel_class = _Channel
    return server


def _socket_map(server) -> dict:
    """The socket map the server's loop polls (waitress keeps it private on a single listener)."""
    return server._map if isinstance(server, BaseWSGIServer) else server.map


def _listeners(server) -> list[BaseWSGIServer]:
    """The listening servers: one, or several when ``host`` resolves to several addresses."""
    if isinstance(server, BaseWSGIServer):
        return [server]
    return [s for s in server.map.values() if isinstance(s, BaseWSGIServer)]


def _in_loop(server, action: Callable[[], None]) -> None:
    """Run ``action`` in the server's loop thread, where closing its sockets is safe."""
    # The trigger (a dispatcher in the socket map, shared by the listeners) outlives the listeners.
    wake = next((d for d in list(_socket_map(server).values()) if isinstance(d, trigger.trigger)), None)
    if wake is None:  # closed already: nothing is left to close
        return
    try:
        wake.pull_trigger(action)
    except OSError:
        # The trigger's pipe is closed: the loop saw its read end go bad and closed it (seen once
        # in CI, EBADF; cause not found). Act from here; the loop, if it still runs, ends on the
        # empty map.
        log.warning("waitress's trigger is closed; acting on the server's sockets from the stopping thread")
        action()


def _close_all(server) -> None:
    """Close every socket of the server: an empty socket map ends its loop."""
    _in_loop(server, lambda: wasyncore.close_all(_socket_map(server)))


def _stop_listening(server) -> None:
    """Accept no new connections; the open ones go on."""

    def close_listeners() -> None:
        for listener in _listeners(server):
            # The dispatcher's close, not the server's: that one closes the trigger too, which the
            # request threads still pull to have their output sent.
            wasyncore.dispatcher.close(listener)

    _in_loop(server, close_listeners)


def _drained(server) -> bool:
    """No request is being answered and every response is sent (read from another thread: a
    snapshot, good enough to decide when to stop waiting)."""
    if server.task_dispatcher.active_count:
        return False
    return not any(getattr(channel, "total_outbufs_len", 0) for channel in list(_socket_map(server).values()))


def _base_url(server) -> str:
    listener = _listeners(server)[0]
    host = listener.effective_host
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{listener.effective_port}"


def serve_in_thread(
    app, host: str = "127.0.0.1", port: int = 0, threads: int = DEFAULT_THREADS
) -> tuple[str, Callable[[], None]]:
    """Serve ``app`` from a background thread on ``host:port`` (0: a free port) with ``threads``
    request threads (each open results stream holds one).

    Returns ``(base_url, stop)``; ``stop()`` closes every connection and waits for the thread.
    """
    server = _create(app, host, port, max_body_bytes=None, threads=threads)
    thread = threading.Thread(target=server.run, name=f"waitress {host}:{port}", daemon=True)
    thread.start()
    stopped = threading.Event()

    def stop() -> None:
        if stopped.is_set():
            return
        stopped.set()
        _close_all(server)
        thread.join(_STOP_WAIT_S)
        server.task_dispatcher.shutdown()

    return _base_url(server), stop


def serve(
    app,
    host: str,
    port: int,
    *,
    max_body_bytes: int | None = None,
    threads: int = DEFAULT_THREADS,
    on_listen: Callable[[str], None] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` in the foreground until SIGINT or SIGTERM, then return after closing.

    ``on_listen(base_url)`` is called once the socket listens (with the real port when 0 was asked).
    On the first SIGINT or SIGTERM the server stops listening, calls ``on_stop()`` (which ends the
    open results streams, so their last words reach the clients), gives the answers under way
    ``_DRAIN_S`` to be sent, then closes every connection and returns. A second signal returns at
    once.
    """
    server = _create(app, host, port, max_body_bytes, threads)
    stopping = threading.Event()
    signalled: list[tuple[str, float]] = []  # the first signal's name and time

    def stop_gracefully() -> None:
        # In its own thread: the loop keeps running meanwhile, to send what the responses still write.
        _stop_listening(server)
        try:
            if on_stop is not None:
                on_stop()
            give_up = time.monotonic() + _DRAIN_S
            while not _drained(server) and time.monotonic() < give_up:
                time.sleep(0.01)
        finally:
            _close_all(server)

    def terminate(signum, frame) -> None:
        if stopping.is_set():
            # Signal handlers run in the main thread, the server's loop thread: its sockets may be
            # closed from here, which ends the loop now.
            wasyncore.close_all(_socket_map(server))
            return
        stopping.set()
        signalled.append((signal.Signals(signum).name, time.monotonic()))
        log.info("stopping on %s", signalled[0][0])
        threading.Thread(target=stop_gracefully, name="cqels-stop", daemon=True).start()

    previous = {signum: signal.signal(signum, terminate) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        if on_listen is not None:
            on_listen(_base_url(server))
        try:
            server.run()
        except OSError:
            if not stopping.is_set():
                raise  # the port is taken, say: the caller reports it
            # A second signal closed the sockets under the loop's select (EBADF): that is the stop.
        if signalled:
            name, since = signalled[0]
            log.info("stopped %.3f s after %s: every connection closed", time.monotonic() - since, name)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        # The request threads are daemons: one stuck in a long query does not hold the exit up.
        server.task_dispatcher.shutdown(timeout=_THREADS_EXIT_S)
