"""The HTTP side of the W3C protocol manifests: ``ht:Request`` records and a raw HTTP client.

The SPARQL 1.1 Protocol and Graph Store Protocol manifests describe each test as a connection
(``ht:Connection``) carrying a list of ``ht:Request``s (``ht:methodName``, ``ht:absolutePath``,
``ht:headers``, ``ht:body``), each with the ``ht:Response`` it must get: ``mf:expectedStatus``
(codes such as ``hts:Created`` or classes such as ``hts:StatusCode2xx``), and optionally
``mf:expectedFormat``/``mf:expectedBoolean`` (protocol) or response headers, a body and
``mf:expectedLocation`` (GSP). Manifests are read with ``w3c.py``; this module only walks the
request records under a test's action.

Requests go out through ``http.client`` rather than urllib: urllib adds a form Content-Type to
every POST without one, and several protocol tests are exactly about requests without it.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from urllib.parse import urlsplit

import pyoxigraph as ox
from w3c import MF, W3CTest, graph_refs, objects, one, rdf_list

HT = "http://www.w3.org/2011/http#"
HTS = "http://www.w3.org/2011/http-statusCodes#"
CNT = "http://www.w3.org/2011/content#"
UT = "http://www.w3.org/2009/sparql/tests/test-update#"


@dataclass(frozen=True)
class ExpectedStatus:
    """One acceptable status: an exact code, or a class (2 for ``hts:StatusCode2xx``)."""

    code: int | None = None
    status_class: int | None = None

    def accepts(self, status: int) -> bool:
        if self.code is not None:
            return status == self.code
        return status // 100 == self.status_class

    def __str__(self) -> str:
        return str(self.code) if self.code is not None else f"{self.status_class}xx"


@dataclass(frozen=True)
class ExpectedResponse:
    statuses: tuple[ExpectedStatus, ...]
    result_format: str | None = None  # protocol: "boolean", "tabular" or "RDF"
    boolean: bool | None = None  # protocol: the ASK answer
    headers: tuple[tuple[str, str], ...] = ()  # GSP: response headers that must be present
    body: str | None = None  # GSP: an RDF document the response must be isomorphic to
    location_variable: str | None = None  # GSP: e.g. "$LOCATION$", bound to the Location header

    def accepts(self, status: int) -> bool:
        return any(expected.accepts(status) for expected in self.statuses)

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


@dataclass(frozen=True)
class ManifestRequest:
    method: str
    path: str  # as written in the manifest (/sparql/…, /gsp…)
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    response: ExpectedResponse

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def body_text(self) -> str:
        return (self.body or b"").decode("utf-8", errors="replace")


def _text(store: ox.Store, subject, predicate: str) -> str | None:
    term = one(store, subject, predicate)
    return term.value if term is not None else None


def _headers(store: ox.Store, subject) -> tuple[tuple[str, str], ...]:
    return tuple(
        (_text(store, header, HT + "fieldName"), _text(store, header, HT + "fieldValue"))
        for header in rdf_list(store, one(store, subject, HT + "headers"))
    )


def _body(store: ox.Store, subject) -> tuple[str | None, str]:
    """The ``cnt:chars`` of an ``ht:body`` and its ``cnt:characterEncoding``."""
    body = one(store, subject, HT + "body")
    if body is None:
        return None, "UTF-8"
    return _text(store, body, CNT + "chars"), _text(store, body, CNT + "characterEncoding") or "UTF-8"


def _status(term) -> ExpectedStatus:
    name = term.value.removeprefix(HTS)
    match = re.fullmatch(r"StatusCode(\d)xx", name)
    if match:
        return ExpectedStatus(status_class=int(match.group(1)))
    # hts:NoContent → HTTPStatus.NO_CONTENT, hts:OK → HTTPStatus.OK
    return ExpectedStatus(code=HTTPStatus[re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).upper()].value)


def _response(store: ox.Store, node) -> ExpectedResponse:
    result_format = _text(store, node, MF + "expectedFormat")
    boolean = one(store, node, MF + "expectedBoolean")
    body, _ = _body(store, node)
    return ExpectedResponse(
        statuses=tuple(_status(t) for t in objects(store, node, MF + "expectedStatus")),
        result_format=result_format,
        boolean=None if boolean is None else boolean.value == "true",
        headers=_headers(store, node),
        body=body,
        location_variable=_text(store, node, MF + "expectedLocation"),
    )


def requests_of(test: W3CTest) -> list[ManifestRequest]:
    """The requests of a machine-readable protocol/GSP test, in order."""
    store, action = test.extra["store"], test.extra["action_node"]
    requests = []
    for node in rdf_list(store, one(store, action, HT + "requests")):
        chars, encoding = _body(store, node)
        requests.append(
            ManifestRequest(
                method=_text(store, node, HT + "methodName"),
                path=_text(store, node, HT + "absolutePath"),
                headers=_headers(store, node),
                body=None if chars is None else chars.encode(encoding),
                response=_response(store, one(store, node, HT + "resp")),
            )
        )
    return requests


def graph_data_of(test: W3CTest) -> tuple[tuple[str, object], ...]:
    """``ut:graphData`` given on the test itself (the protocol manifest puts it there): (IRI, file)."""
    store = test.extra["store"]
    return graph_refs(store, ox.NamedNode(test.iri), UT + "graphData")


def requires(test: W3CTest) -> set[str]:
    """The ``mf:requires`` features of a test, as local names (``DirectGraphIdentification``)."""
    store = test.extra["store"]
    return {t.value.removeprefix(MF) for t in objects(store, ox.NamedNode(test.iri), MF + "requires")}


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: Message
    body: bytes

    @property
    def media_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()


def send(
    base_url: str, method: str, path: str, headers: tuple[tuple[str, str], ...] = (), body: bytes | None = None
) -> RawResponse:
    """One request exactly as given: no header is added except Host and, with a body, Content-Length."""
    where = urlsplit(base_url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        # A HEAD response has no body, whatever its Content-Length says.
        data = b"" if method == "HEAD" else response.read()
        return RawResponse(response.status, response.headers, data)
    finally:
        connection.close()
