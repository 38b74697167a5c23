"""werkzeug's test client over the ASGI app the server runs (``http.asgi.application``), in process.

``client(flask_app)`` takes the requests of werkzeug's ``Client`` API (``get``, ``post``, ``open``
with ``environ_overrides``) through a WSGI-to-ASGI shim that hands the raw bytes on unchanged (a
query string of any bytes too), so the native routes answer as they do behind uvicorn and the rest
reaches Flask. Responses are read whole: not for results streams.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from http import HTTPStatus

from flask import Flask
from werkzeug.test import Client

from cqels_endpoint.http.asgi import application


def client(flask_app: Flask) -> Client:
    return Client(wsgi(application(flask_app)))


def wsgi(app) -> Callable:
    """A WSGI app answering with the ASGI ``app``."""

    def wsgi(environ: dict, start_response: Callable) -> Iterable[bytes]:
        headers = [
            (key[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1"))
            for key, value in environ.items()
            if key.startswith("HTTP_")
        ]
        headers += [
            (key.replace("_", "-").lower().encode("latin-1"), environ[key].encode("latin-1"))
            for key in ("CONTENT_TYPE", "CONTENT_LENGTH")
            if environ.get(key)
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": environ["REQUEST_METHOD"],
            "scheme": environ.get("wsgi.url_scheme", "http"),
            "path": environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8", "replace"),
            "raw_path": environ.get("PATH_INFO", "").encode("latin-1"),
            "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
            "root_path": "",
            "server": (environ.get("SERVER_NAME", "localhost"), int(environ.get("SERVER_PORT") or 80)),
            "headers": headers,
        }
        length = environ.get("CONTENT_LENGTH")
        body = environ["wsgi.input"].read(int(length)) if length else environ["wsgi.input"].read()
        status, response_headers, content = asyncio.run(_call(app, scope, body))
        start_response(f"{status} {HTTPStatus(status).phrase}", response_headers)
        return [content]

    return wsgi


async def _call(app, scope: dict, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    received = False
    start: dict = {}
    parts: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> dict:
        nonlocal received
        if received:
            await done.wait()
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)
    headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in start.get("headers", [])]
    return start["status"], headers, b"".join(parts)
