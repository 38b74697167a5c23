"""The ASGI application the server runs: the hot routes answered here, the Flask app behind them.

``EndpointApp(flask_app)`` answers natively, on the event loop, what every client does all the time:

| route | here |
|---|---|
| ``GET /health`` (and ``HEAD``) | at once, from the store's version |
| ``GET /query?query=…`` (or ``/sparql``), ``POST`` of an ``application/sparql-query`` body, no other parameter | evaluated in a worker thread |
| ``POST /update`` of an ``application/sparql-update`` body, no parameter | in a worker thread, after the token and read-only checks |
| ``POST /streams/{name}`` | read and applied in a worker thread (``streams.push``) |
| ``GET``/``HEAD /queries/{name}/results`` | SSE or NDJSON (``results.open_results``), waiting on the loop: a subscriber holds no thread |
| WebSocket ``/streams/{name}/ws`` | each message one push batch, in a worker thread (``sockets.produce``) |
| WebSocket ``/queries/{name}/ws`` | each emission one message, waiting on the loop (``sockets.consume``) |

Everything else goes to the Flask app, run by ``a2wsgi`` in its own threads, unchanged to a client
(the Graph Store Protocol, query registration, the console, metrics, and the SPARQL Protocol's
other forms: ``default-graph-uri``, form bodies, a request whose parameters or body are off, which
the Flask routes ``query.py`` and ``update.py`` then refuse with their own checks). A body the
native routes read already is handed on with the request.

What the native routes share with Flask: the same JSON errors (``errors.ERROR_ANSWERS``), the body
limit (413 before reading when ``Content-Length`` says so, else as soon as the body passes it), the
token and read-only mode (``auth.write_refusal``), CORS (``cors.CorsMiddleware`` wraps this app).
A WebSocket handshake the routes refuse gets that HTTP error (uvicorn's ``websocket.http.response``).
A query's own deadline (``static_store.timeout``) ends a runaway query; as it runs in a worker
thread and pyoxigraph releases the GIL while it evaluates, the loop keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import lru_cache, partial
from urllib.parse import parse_qsl

from a2wsgi import WSGIMiddleware
from flask import Flask
from werkzeug.http import parse_options_header
from werkzeug.sansio.utils import get_host

from cqels_endpoint.connectors.events import EVENT_FORMATS
from cqels_endpoint.http.auth import denial_reason, write_refusal
from cqels_endpoint.http.context import Endpoint, endpoint
from cqels_endpoint.http.cors import CorsMiddleware
from cqels_endpoint.http.errors import HttpError, http_error, json_body, too_large_message
from cqels_endpoint.http.negotiation import choose
from cqels_endpoint.http.params import base_iri_of, is_utf8_charset, query_params, single
from cqels_endpoint.http.results import ResultStream, emission_format, find_hub, open_results, queue_policy, resume_after
from cqels_endpoint.http.sockets import close_reason, consume, produce, watch_disconnect
from cqels_endpoint.http.streams import PushRequest, push, stream_iri
from cqels_endpoint.runtime.functions.extensions import custom_functions
from static_store import GRAPH_FORMATS, RESULTS_FORMATS
from static_store.shape import query_shape

log = logging.getLogger("cqels_endpoint.http")

Scope = dict
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]

#: Scope key of a callable that drops the request's connection at once (``server.py`` puts it
#: there): a results stream whose client stopped reading waits in a write that can never finish.
ABORT_CONNECTION = "cqels.abort_connection"

_QUERY_PATHS = frozenset({"/query", "/sparql"})
_GRAPH_FORMS = ("CONSTRUCT", "DESCRIBE")
_RESULTS_PATH = re.compile(r"/queries/(.+)/results\Z", re.DOTALL)
_STREAM_SOCKET = re.compile(r"/streams/(.+)/ws\Z", re.DOTALL)
_QUERY_SOCKET = re.compile(r"/queries/(.+)/ws\Z", re.DOTALL)
# The scheme of the HTTP URL a WebSocket's events would be posted to (their base IRI).
_HTTP_SCHEMES = {"ws": "http", "wss": "https"}
_JSON = b"application/json"
# How long a dropped subscriber's stream gets to end its response before its connection is
# dropped under it (it may be stuck in a write to a client that stopped reading).
_DROP_GRACE_S = 2.0


class _TooLarge(Exception):
    pass


class Workers:
    """Threads that run the native routes' blocking work (evaluations, writes) for the event loop.

    Lighter than ``loop.run_in_executor``: a job is a queue entry and its answer one
    ``call_soon_threadsafe``, which halves the cost of the hop (measured: 36 µs wall, 23 µs CPU a
    round trip against 68 and 36, on the development machine under load). Threads start as jobs
    find none idle, up to ``limit``.
    """

    def __init__(self, limit: int):
        self._limit = limit
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def run(self, work: Callable[[], object]) -> asyncio.Future:
        """The answer of ``work()``, run in a worker thread, as a future of the running loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((loop, future, work))
        with self._lock:
            spawn = self._idle == 0 and self._threads < self._limit
            if spawn:
                self._threads += 1
        if spawn:
            threading.Thread(target=self._work, name=f"cqels-request-{self._threads}", daemon=True).start()
        return future

    def close(self) -> None:
        """Each thread ends after the jobs queued before (none is waited for)."""
        with self._lock:
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
            if job is None:
                return
            loop, future, work = job
            try:
                answer, error = work(), None
            except BaseException as raised:  # handed to the awaiting coroutine
                answer, error = None, raised
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits it any more
                loop.call_soon_threadsafe(_settle, future, answer, error)


def _settle(future: asyncio.Future, answer: object, error: BaseException | None) -> None:
    if future.cancelled():  # the request's task was cancelled (the server is stopping)
        return
    if error is None:
        future.set_result(answer)
    else:
        future.set_exception(error)


def application(flask_app: Flask) -> Callable:
    """The ASGI app to serve for ``flask_app`` (built by ``app.create_app``): ``EndpointApp``, inside
    ``CorsMiddleware`` when origins are configured (outermost: it answers preflights itself)."""
    config = endpoint(flask_app).config
    app = EndpointApp(flask_app, config.threads)
    return CorsMiddleware(app, config.cors_origins) if config.cors_origins else app


class EndpointApp:
    """The ASGI app serving ``flask_app`` (built by ``app.create_app``), see the module docstring.

    ``threads``: the worker threads of the native routes, and as many for the Flask routes.
    """

    def __init__(self, flask_app: Flask, threads: int):
        self.flask_app = flask_app
        self.context: Endpoint = endpoint(flask_app)
        self._config = self.context.config
        self._limit = self._config.max_body_bytes
        self._workers = Workers(threads)
        self._flask = WSGIMiddleware(flask_app, workers=threads)

    def close(self) -> None:
        """Stop the worker threads (after their requests end; the server stopped taking new ones)."""
        self._workers.close()
        self._flask.executor.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        try:
            if path in _QUERY_PATHS and method in ("GET", "POST"):
                await self._query(scope, receive, send, method)
            elif path == "/update" and method == "POST":
                await self._update(scope, receive, send)
            elif path == "/health" and method in ("GET", "HEAD"):
                await _json(send, 200, {"status": "ok", "version": self.context.store.version}, head=method == "HEAD")
            elif path.startswith("/streams/") and len(path) > len("/streams/") and method == "POST":
                await self._push(scope, receive, send, path[len("/streams/"):])
            elif method in ("GET", "HEAD") and (results := _RESULTS_PATH.match(path)) is not None:
                await self._results(scope, receive, send, results.group(1), method)
            else:
                await self._to_flask(scope, receive, send)
        except _TooLarge:
            await _error(send, HttpError(413, too_large_message(self._limit)))

    # ------------------------------------------------------------------ SPARQL Protocol

    async def _query(self, scope: Scope, receive: Receive, send: Send, method: str) -> None:
        headers = _headers(scope)
        body = b""
        text = None
        if method == "GET":
            text = _only_param(scope["query_string"], "query")
        elif not scope["query_string"] and _is_utf8_body(headers, "application/sparql-query"):
            body = await self._body(scope, receive, headers)
            text = _utf8(body)
        if text is None:  # not the plain form: the route's own checks answer
            return await self._to_flask(scope, _replay(body, receive), send)
        formats = GRAPH_FORMATS if query_shape(text).form in _GRAPH_FORMS else RESULTS_FORMATS
        fmt = choose(formats, headers.get("accept"))
        if fmt is None:  # the route answers 406
            return await self._to_flask(scope, _replay(body, receive), send)
        config = self._config
        evaluate = partial(
            self.context.store.query, text, base_iri=_base_iri(scope, headers), timeout=config.query_timeout,
            allow_remote=config.allow_remote, custom_functions=custom_functions(),
        )
        try:
            answer = await self._run(lambda: evaluate().serialize(fmt.media_type))
        except Exception as error:
            return await _error(send, http_error(error))
        await _respond(send, 200, [(b"content-type", fmt.content_type.encode()), (b"vary", b"Accept")], answer)

    async def _update(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        config = self._config
        if (
            scope["query_string"]
            or not _is_utf8_body(headers, "application/sparql-update")
            or config.read_only  # the route answers 403
            or denial_reason(headers.get("authorization"), config.auth_token) is not None  # 401
        ):
            return await self._to_flask(scope, receive, send)
        body = await self._body(scope, receive, headers)
        text = _utf8(body)
        if text is None:
            return await self._to_flask(scope, _replay(body, receive), send)
        execute = partial(
            self.context.store.update, text, base_iri=_base_iri(scope, headers), allow_remote=config.allow_remote,
            custom_functions=custom_functions(),
        )
        try:
            await self._run(execute)
        except Exception as error:
            return await _error(send, http_error(error))
        await _respond(send, 204, [(b"content-type", b"text/html; charset=utf-8")], b"")

    # ------------------------------------------------------------------ streams

    async def _push(self, scope: Scope, receive: Receive, send: Send, name: str) -> None:
        headers = _headers(scope)
        refused = write_refusal(self._config, "POST", scope["path"], headers.get("authorization"))
        if refused is not None:  # before the body is read, as for every write
            return await _error(send, refused)
        body = await self._body(scope, receive, headers)
        request = PushRequest(name, headers.get("content-type"), scope["query_string"], body, _base_iri(scope, headers))
        try:
            answer = await self._run(partial(push, self.context, request))
        except Exception as error:
            return await _error(send, http_error(error))
        await _json(send, 200, answer)

    async def _results(self, scope: Scope, receive: Receive, send: Send, name: str, method: str) -> None:
        headers = _headers(scope)
        try:
            opened = open_results(self.context, name, method, headers.get("accept"), headers.get("last-event-id"),
                                  scope["query_string"])
        except Exception as error:
            return await _error(send, http_error(error))
        start = {"type": "http.response.start", "status": 200,
                 "headers": [(k.encode(), v.encode()) for k, v in opened.headers]}
        stream = opened.stream
        if stream is None:  # HEAD
            await send(start)
            return await send({"type": "http.response.body", "body": b""})
        finished = _hang_up_when_dropped(stream, scope)
        watcher = asyncio.create_task(watch_disconnect(receive, stream.client_gone, "http.disconnect"))
        try:
            await send(start)
            async for chunk in stream.chunks():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            finished()
            watcher.cancel()

    # ------------------------------------------------------------------ WebSocket

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":  # the client left before its handshake was read
            return
        path = scope["path"]
        try:
            if (found := _STREAM_SOCKET.match(path)) is not None:
                return await self._producer(scope, receive, send, found.group(1))
            if (found := _QUERY_SOCKET.match(path)) is not None:
                return await self._consumer(scope, receive, send, found.group(1))
            raise HttpError(404, f"no WebSocket route at {path}: /streams/{{name}}/ws pushes events, "
                                 "/queries/{name}/ws reads a query's emissions")
        except HttpError as refused:  # raised before the handshake is accepted
            await _refuse(scope, send, refused)

    async def _producer(self, scope: Scope, receive: Receive, send: Send, name: str) -> None:
        headers = _headers(scope)
        params = query_params(scope["query_string"])
        # Browsers cannot set headers on a WebSocket: the token may come as ?access_token= instead.
        token = single(params, "access_token", "give one token")
        authorization = headers.get("authorization") or (None if token is None else f"Bearer {token}")
        refused = write_refusal(self._config, "WebSocket", scope["path"], authorization)
        if refused is not None:
            raise refused
        format_name = single(params, "format", "give one syntax") or "ndjson"
        if format_name not in EVENT_FORMATS:
            raise HttpError(400, f"format={format_name}: the messages' syntax is one of {', '.join(EVENT_FORMATS)}")
        stream_iri(name, self._config.stream_base)  # a bad name is refused at the handshake, not at each message
        # Relative IRIs in the events resolve as in a POST of them to /streams/{name}.
        base_url = _base_iri({**scope, "scheme": _HTTP_SCHEMES[scope.get("scheme", "ws")], "path": f"/streams/{name}"},
                             headers)
        request = PushRequest(name, EVENT_FORMATS[format_name], b"", b"", base_url)

        def apply(body: bytes) -> Awaitable[dict]:
            return self._run(partial(push, self.context, replace(request, body=body)))

        await send({"type": "websocket.accept"})
        await produce(apply, self._limit, receive, send)

    async def _consumer(self, scope: Scope, receive: Receive, send: Send, name: str) -> None:
        headers = _headers(scope)
        params = query_params(scope["query_string"])
        after = resume_after(headers.get("last-event-id"), params)
        hub = find_hub(self.context, name)
        triple_format = emission_format(hub, params, headers.get("accept"))
        capacity, overflow = queue_policy(params, self._config.subscriber_queue)
        stream = ResultStream(self.context.subscriptions, hub, after, capacity, overflow)
        # Never called off: the close frame of a dropped socket may sit behind what its client
        # does not read (the server would wait 10 s for its answer), and no other request shares it.
        _hang_up_when_dropped(stream, scope)
        try:
            await send({"type": "websocket.accept"})
            await consume(stream, triple_format, receive, send)
        finally:
            stream.close()

    # ------------------------------------------------------------------ plumbing

    async def _to_flask(self, scope: Scope, receive: Receive, send: Send) -> None:
        query_string = scope["query_string"]
        if not query_string.isascii():
            # WSGI's QUERY_STRING is text (a2wsgi reads it as ASCII): raw bytes beyond ASCII go on
            # percent-encoded, which the routes' strict UTF-8 reading then judges the same.
            escaped = b"".join(bytes((byte,)) if byte < 0x80 else b"%%%02X" % byte for byte in query_string)
            scope = {**scope, "query_string": escaped}
        await self._flask(scope, receive, send)


    async def _run(self, work: Callable[[], object]) -> object:
        return await self._workers.run(work)

    async def _body(self, scope: Scope, receive: Receive, headers: dict[str, str]) -> bytes:
        """The whole body; ``_TooLarge`` past the limit (before reading when its length says so)."""
        limit = self._limit
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _TooLarge
        parts = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(parts)


async def _lifespan(receive: Receive, send: Send) -> None:
    # Nothing to start or stop per server: the app and its engine are built and closed by their owner.
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` for the Flask app of a request whose body was read already (``body``)."""
    if not body:
        return receive
    sent = False

    async def replayed() -> dict:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (repeated ones joined with commas, as WSGI does)."""
    headers: dict[str, str] = {}
    for name, value in scope["headers"]:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers[key] = f"{headers[key]},{text}" if key in headers else text
    return headers


def _only_param(query_string: bytes, name: str) -> str | None:
    """The value of ``name`` when the query string holds that parameter once and nothing else.

    Short query strings, which clients send again and again, are decoded once: percent-decoding a
    query text in Python costs a fifth of a point lookup.
    """
    if len(query_string) <= _KEPT_QUERY_STRING:
        return _only_param_kept(query_string, name)
    return _parse_only_param(query_string, name)


_KEPT_QUERY_STRING = 8192


@lru_cache(maxsize=1024)
def _only_param_kept(query_string: bytes, name: str) -> str | None:
    return _parse_only_param(query_string, name)


def _parse_only_param(query_string: bytes, name: str) -> str | None:
    try:
        pairs = parse_qsl(query_string.decode("utf-8"), keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        return None
    if len(pairs) != 1 or pairs[0][0] != name:
        return None
    return pairs[0][1]


def _is_utf8_body(headers: dict[str, str], media_type: str) -> bool:
    mimetype, options = parse_options_header(headers.get("content-type", ""))
    return mimetype.lower() == media_type and is_utf8_charset(options.get("charset"))


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _base_iri(scope: Scope, headers: dict[str, str]) -> str:
    """``request.base_url`` as werkzeug reads it: the base IRI of what the request sends."""
    scheme = scope.get("scheme", "http")
    return base_iri_of(scheme, get_host(scheme, headers.get("host"), scope.get("server")), scope.get("root_path", ""),
                       scope["path"])


async def _respond(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes, head: bool = False,
                   kind: str = "http") -> None:
    """Answer with ``status``; ``kind`` ``websocket.http`` answers a WebSocket handshake (refusing it)."""
    await send({"type": f"{kind}.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": f"{kind}.response.body", "body": b"" if head else body})


async def _json(send: Send, status: int, data: object, head: bool = False) -> None:
    await _respond(send, status, [(b"content-type", _JSON)], json_body(data), head)


async def _error(send: Send, error: HttpError, kind: str = "http") -> None:
    headers = [(b"content-type", _JSON), *((k.encode(), v.encode()) for k, v in error.headers.items())]
    await _respond(send, error.status, headers, error.body(), kind=kind)


async def _refuse(scope: Scope, send: Send, error: HttpError) -> None:
    """Refuse a WebSocket handshake: with the HTTP error when the server can answer one (the ASGI
    ``websocket.http.response`` extension, uvicorn's), else a 1008 close saying why."""
    if "websocket.http.response" in scope.get("extensions", {}):
        return await _error(send, error, kind="websocket.http")
    await send({"type": "websocket.close", "code": 1008, "reason": close_reason(f"{error.status}: {error.message}")})


def _hang_up_when_dropped(stream: ResultStream, scope: Scope) -> Callable[[], None]:
    """Drop the connection of ``stream`` ``_DROP_GRACE_S`` after the hub drops it for being slow
    (it may be stuck in a write to a client that stopped reading); call what this returns once the
    stream has ended by itself (its connection may serve the next request)."""
    loop = asyncio.get_running_loop()
    abort = scope.get(ABORT_CONNECTION)
    finished = False

    def hang_up() -> None:
        if not finished and abort is not None:
            abort()

    def dropped() -> None:  # the engine's thread
        loop.call_soon_threadsafe(loop.call_later, _DROP_GRACE_S, hang_up)

    def finish() -> None:
        nonlocal finished
        finished = True

    stream.subscriber.on_drop = dropped
    return finish
