"""The WebSocket sessions of ``asgi.py``'s two WebSocket routes, once their handshake is accepted.

``/streams/{name}/ws`` (``produce``): a producer's socket. Each message, text or binary, is one
batch in the syntax ``?format=`` chose at the handshake, applied as a ``POST /streams/{name}`` body
is (``streams.push``: all or nothing, in a worker thread), in the order sent; each gets one JSON
text reply, ``{"seq": n, "stream", "accepted", "latest", "watermark"}`` or ``{"seq": n, "status":
400|409|413|415|422, "error", "line", "column"}``, ``seq`` numbering the socket's messages from 1.
A refused message never closes the socket nor stops the ones after it.

``/queries/{name}/ws`` (``consume``): a reader of the query's emissions. The first message says
what the subscription starts from, ``{"subscribed": name, "last": n, "message": "…"}`` (with
``"gap": {"first", "last"}`` when a resume reaches further back than the replay buffer); then one
text message per emission: the JSON of an SSE ``data:`` line with the emission's ``"id"`` first
and, after emissions the subscriber's overflow policy discarded, ``"skipped": n``. The server ends
it with a close frame: 1000 when the query is unregistered, 1001 when the server stops, 1008 when
a ``disconnect`` subscriber fell behind (its connection dropped 2 s later if it is still open: its
client may not read as far as the close frame); a failed query sends ``{"query", "error"}`` first, then
closes with 1011. What the client sends is ignored.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from cqels_endpoint.connectors.subscriptions import FAILED, SHUTDOWN, SLOW, UNREGISTERED, Entry, SubscriptionEnded
from cqels_endpoint.http.errors import HttpError, http_error, too_large_message
from cqels_endpoint.http.results import ResultStream, emission_json
from static_store import MediaFormat

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]

# The close code of a subscription the server ended, by why (RFC 6455 §7.4.1).
CLOSE_CODES = {UNREGISTERED: 1000, SHUTDOWN: 1001, SLOW: 1008, FAILED: 1011}
# A close frame's reason is at most 123 bytes of UTF-8.
_REASON_BYTES = 123


async def produce(apply: Callable[[bytes], Awaitable[dict]], limit: int, receive: Receive, send: Send) -> None:
    """Apply each message of the socket with ``apply`` (``streams.push`` of its bytes, in a worker)
    and answer it, until the client closes; a message over ``limit`` bytes is refused (413)."""
    seq = 0
    while (message := await receive())["type"] == "websocket.receive":
        seq += 1
        body = message.get("bytes")
        if body is None:
            body = message["text"].encode("utf-8")
        try:
            if len(body) > limit:
                raise HttpError(413, too_large_message(limit, "message"))
            reply = {"seq": seq, **await apply(body)}
        except Exception as error:
            refused = http_error(error)
            reply = {"seq": seq, "status": refused.status, "error": refused.message, "line": refused.line,
                     "column": refused.column}
        await send({"type": "websocket.send", "text": json.dumps(reply, ensure_ascii=False)})


async def consume(stream: ResultStream, triple_format: MediaFormat | None, receive: Receive, send: Send) -> None:
    """Send the emissions of ``stream`` (module docstring) until it ends or the client is gone."""
    watcher = asyncio.create_task(watch_disconnect(receive, stream.client_gone, "websocket.disconnect"))
    try:
        await send({"type": "websocket.send", "text": _subscribed(stream)})
        try:
            async for entry, skipped in stream.entries():
                await send({"type": "websocket.send", "text": emission_message(entry, skipped, triple_format)})
        except SubscriptionEnded as ended:
            if ended.reason == FAILED:
                error = json.dumps({"query": stream.hub.name, "error": ended.message}, ensure_ascii=False)
                await send({"type": "websocket.send", "text": error})
            await send({"type": "websocket.close", "code": CLOSE_CODES[ended.reason], "reason": close_reason(ended.message)})
    finally:
        watcher.cancel()


def emission_message(entry: Entry, skipped: int, triple_format: MediaFormat | None) -> str:
    """The SSE ``data:`` JSON of ``entry`` (written once per syntax, whoever reads it) with its ``id``,
    and ``skipped`` when emissions were discarded before it."""
    key = ("json", None if triple_format is None else triple_format.media_type)
    text = entry.rendered(key, lambda entry: emission_json(entry, triple_format))
    # Spliced in front rather than parsed and dumped again: the text is a JSON object, "{" first.
    head = f'{{"id": {entry.seq}, ' + (f'"skipped": {skipped}, ' if skipped else "")
    return head + text[1:]


def close_reason(message: str) -> str:
    """``message`` cut to what a close frame holds, on a character boundary.

    >>> len(close_reason("é" * 70)), len(close_reason("e" * 70))  # 140 bytes: 61 characters (122 bytes) fit
    (61, 70)
    """
    return message.encode("utf-8")[:_REASON_BYTES].decode("utf-8", errors="ignore")


async def watch_disconnect(receive: Receive, gone: Callable[[], None], disconnect: str) -> None:
    """Wait for the ``disconnect`` message (``http.disconnect``, ``websocket.disconnect``), skipping
    what else the client sends, then call ``gone``."""
    while (await receive())["type"] != disconnect:
        pass
    gone()


def _subscribed(stream: ResultStream) -> str:
    hub, gap = stream.hub, stream.gap
    data = {"subscribed": hub.name, "last": hub.last_seq, "message": stream.greeting()}
    if gap is not None:
        data["gap"] = {"first": gap.first, "last": gap.last}
    return json.dumps(data, ensure_ascii=False)
