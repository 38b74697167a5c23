"""Shared fixtures: a real HTTP endpoint (Flask app under the production WSGI server, in a thread).

``live_endpoint`` is one server for the whole session over an in-memory ``StaticStore``; tests that
share it must not rely on what other tests left in the store (``live_endpoint.reset()`` empties it).
``endpoint_factory`` starts extra servers with their own ``ServerConfig`` (an auth token, a small
body limit, ...), each with its own in-memory store, stopped at the end of the session.
Once collected, the session starts the twins' run of the engine's property tests (``twin_run``).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from email.message import Message
from typing import TYPE_CHECKING

import pytest
import twin_run
from hypothesis import settings

# CI replays the same examples every run (derandomize): a red CI then means a change broke them,
# never that a new random draw found an old bug. Local runs keep exploring; what they find is kept
# as regression files (tests/regressions/) and replayed everywhere. No deadline in CI: the tests
# prove answers, and a runner's load (the twins' run shares it: twin_run) must not fail them.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_finish(session: pytest.Session) -> None:
    # The twins' run of the engine's property tests goes beside the other tests (``twin_run``).
    if not session.config.option.collectonly:
        twin_run.start_if_selected([item.nodeid for item in session.items])


def pytest_sessionfinish(session: pytest.Session) -> None:
    twin_run.stop()


# The session's mosquitto (``mosquitto``, ``broker``, ``new_broker``), for tests/connectors and tests/console.
pytest_plugins = ["mqtt_fixtures"]


if TYPE_CHECKING:
    from cqels_endpoint.config import ServerConfig
    from static_store import StaticStore

Params = Mapping[str, str] | Sequence[tuple[str, str]]

# Queries whose URL-encoded form is longer go by POST: URLs that long are refused by some servers.
MAX_GET_QUERY_LENGTH = 2000


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Message  # case-insensitive: headers["content-type"]
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self):
        return json.loads(self.body)

    def error(self, status: int) -> dict:
        """The JSON error body ``{"error", "line", "column"}``, after checking the status and media type."""
        assert self.status == status, self.text
        assert self.content_type.startswith("application/json")
        body = self.json()
        assert set(body) == {"error", "line", "column"}
        return body


class LiveEndpoint:
    """A running endpoint: its ``base_url``, the ``store`` behind it, and plain HTTP helpers.

    The helpers never raise for an HTTP error status; they return it, so tests assert on it.
    """

    def __init__(self, base_url: str, store: StaticStore, config: ServerConfig, app=None):
        self.base_url = base_url
        self.store = store
        self.config = config
        self.app = app  # the Flask app served: tests reach its engine with http.context.endpoint(app)
        # No proxies: a proxy from the environment must not sit between the tests and 127.0.0.1.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def url(self, path: str, params: Params | None = None) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self.base_url}{path}{query}"

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        if isinstance(body, str):
            body = body.encode("utf-8")
        request = urllib.request.Request(self.url(path, params), data=body, method=method, headers=dict(headers or {}))
        try:
            with self._opener.open(request, timeout=60) as response:
                return HttpResponse(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            with error:
                return HttpResponse(error.code, error.headers, error.read())

    def get(self, path: str, **kw) -> HttpResponse:
        return self.request("GET", path, **kw)

    def head(self, path: str, **kw) -> HttpResponse:
        return self.request("HEAD", path, **kw)

    def post(self, path: str, **kw) -> HttpResponse:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw) -> HttpResponse:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw) -> HttpResponse:
        return self.request("DELETE", path, **kw)

    def query(
        self,
        text: str,
        *,
        accept: str = "application/sparql-results+json",
        params: Sequence[tuple[str, str]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """A SPARQL Protocol query: ``GET ?query=`` when short, else ``POST application/sparql-query``."""
        headers = {"Accept": accept, **(headers or {})}
        if len(urllib.parse.quote(text)) <= MAX_GET_QUERY_LENGTH:
            return self.get("/query", params=[("query", text), *params], headers=headers)
        headers["Content-Type"] = "application/sparql-query"
        return self.post("/query", params=list(params) or None, body=text, headers=headers)

    def update(self, text: str, *, headers: Mapping[str, str] | None = None) -> HttpResponse:
        """A SPARQL Protocol update, ``POST application/sparql-update``."""
        return self.post(
            "/update", body=text, headers={"Content-Type": "application/sparql-update", **(headers or {})}
        )

    def graph_params(self, graph: str | None) -> list[tuple[str, str]]:
        """GSP indirect identification: ``?default`` for None, else ``?graph=IRI``."""
        return [("default", "")] if graph is None else [("graph", graph)]

    def put_graph(self, graph: str | None, data: bytes, content_type: str, **kw) -> HttpResponse:
        return self._graph_write("PUT", graph, data, content_type, **kw)

    def post_graph(self, graph: str | None, data: bytes, content_type: str, **kw) -> HttpResponse:
        return self._graph_write("POST", graph, data, content_type, **kw)

    def _graph_write(
        self, method: str, graph: str | None, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> HttpResponse:
        return self.request(
            method,
            "/store",
            params=self.graph_params(graph),
            body=data,
            headers={"Content-Type": content_type, **(headers or {})},
        )

    def reset(self) -> None:
        """Empty the store through the endpoint (``DROP ALL``)."""
        response = self.update("DROP ALL", headers=self._auth())
        if response.status not in (200, 204):
            msg = f"DROP ALL answered {response.status}: {response.text}"
            raise AssertionError(msg)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.auth_token}"} if self.config.auth_token else {}


class _Running:
    """A server and its store, to stop together."""

    def __init__(self, config: ServerConfig):
        # Imported here, not at the top: a broken server must fail the tests that use it, not the
        # collection of every test module under tests/.
        from cqels_endpoint.http.app import create_app
        from cqels_endpoint.http.asgi import application
        from cqels_endpoint.http.server import serve_in_thread
        from cqels_endpoint.oxigraph.requests import open_store

        self.store = open_store()  # in memory
        app = create_app(self.store, config)
        base_url, self._stop = serve_in_thread(application(app), config.host, 0, config.max_body_bytes)
        self.endpoint = LiveEndpoint(base_url.rstrip("/"), self.store, config, app)

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            self.store.close()


def _in_memory_config() -> ServerConfig:
    from cqels_endpoint.config import ServerConfig

    return ServerConfig(memory=True, port=0)


@pytest.fixture(scope="session")
def live_endpoint() -> Iterator[LiveEndpoint]:
    running = _Running(_in_memory_config())
    try:
        yield running.endpoint
    finally:
        running.stop()


@pytest.fixture(scope="session")
def endpoint_factory() -> Iterator[Callable[..., LiveEndpoint]]:
    """``endpoint_factory(auth_token="t", ...)``: a new server; the keywords are ServerConfig fields."""
    started: list[_Running] = []

    def start(**config_fields) -> LiveEndpoint:
        running = _Running(replace(_in_memory_config(), **config_fields))
        started.append(running)
        return running.endpoint

    try:
        yield start
    finally:
        for running in reversed(started):
            running.stop()


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test session (local[2], no UI, 4 shuffle partitions). Without
    Java the Spark tests skip on a developer machine, but fail under CI, where skipping would hide them."""
    import shutil

    if shutil.which("java") is None:
        reason = "Java is not installed: the Spark cache engine needs a JRE 17 or later on the PATH"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    from cqels_endpoint.spark.session import build_session

    # Spark's Python workers must run this interpreter, which has the project's packages.
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = build_session("local[2]", "cqels-tests", shuffle_partitions=4)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def demo_store():
    """A store holding the demo data of ``examples/data`` (``cqels serve --demo``)."""
    from cqels_endpoint.http.demo import load_demo
    from cqels_endpoint.oxigraph.requests import open_store

    store = open_store()
    load_demo(store)
    return store
