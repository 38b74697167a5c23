"""The W3C Graph Store Protocol tests against the live endpoint's ``/store``.

Two manifests:

* ``graph-store-protocol/manifest.ttl`` (direct and indirect identification), machine-readable:
  each test is a list of HTTP requests with the expected status, headers, body (compared as RDF,
  up to blank-node renaming) and ``Location``. Its paths start with ``/gsp``, mapped onto
  ``/store``: ``/gsp/person/1.ttl`` becomes ``/store/person/1.ttl``, the graph whose IRI is that
  URL, and ``/gsp?graph=…`` becomes ``/store?graph=…``. Each test starts from an empty store.
* ``http-rdf-update/manifest.ttl``, the deprecated earlier version of the same suite, written as
  prose in ``rdfs:comment``s: encoded here by hand, one request per test, ids the test IRIs. The
  tests form one sequence (each relies on the state its predecessors left), so each test replays
  the requests before it on an empty store and then checks its own. ``$GRAPHSTORE$`` is ``store``
  and ``$HOST$`` the server's authority, so ``http://$HOST$/$GRAPHSTORE$/person/1.ttl`` is the IRI
  of the directly identified graph ``/store/person/1.ttl``, as the prose intends. Two notes:

  - where the prose answers a successful write with ``200 OK`` the endpoint's ``204 No Content``
    is accepted: GSP §5 allows either, and the replacement manifest lists both;
  - ``delete__existing_graph`` deletes ``person/2.ttl``, which no earlier request creates; its
    name says the graph exists, so that step first PUTs it (the replacement test
    ``put_delete_get_delete_*`` does the same);
  - the Turtle of ``post__existing_graph`` and of both parts of ``post__multipart_formdata`` ends
    without the `` .`` Turtle requires after the last triple; it is added here, as the
    replacement manifest does, since those tests are about merging, not about lenient parsing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from http_manifest import ExpectedResponse, ExpectedStatus, ManifestRequest, RawResponse, requests_of, send
from known_failures import KNOWN_FAILURES
from sparql_results import parse_results, results_difference
from w3c import SPARQL11, W3CTest, load_tests
from w3c import select_tests as w3c_tests

if TYPE_CHECKING:
    from conftest import LiveEndpoint

GSP_MANIFEST = SPARQL11 / "graph-store-protocol" / "manifest.ttl"
GSP_TESTS = w3c_tests([GSP_MANIFEST], "GraphStoreProtocolTest")
PROSE_MANIFEST = SPARQL11 / "http-rdf-update" / "manifest.ttl"
PROSE_TESTS = list(load_tests(PROSE_MANIFEST))  # all Deprecated, which select_tests keeps


def _xfail_if_known(test_iri: str, value, test_id: str):
    if test_iri in KNOWN_FAILURES:
        return pytest.param(value, id=test_id, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[test_iri], strict=True))
    return pytest.param(value, id=test_id)


def _media_type_and_charset(content_type: str) -> tuple[str, str | None]:
    media_type, *params = (part.strip().lower() for part in content_type.split(";"))
    charset = next((p.partition("=")[2].strip('"') for p in params if p.startswith("charset=")), None)
    return media_type, charset


def check_response(expected: ExpectedResponse, response: RawResponse, where: str, base_iri: str) -> None:
    assert expected.accepts(response.status), (
        f"{where}: status {response.status}, expected {' or '.join(map(str, expected.statuses))}; "
        f"body: {response.body[:500]!r}"
    )
    expected_type = expected.header("content-type")
    if expected_type is not None:
        actual_type = response.headers.get("Content-Type") or ""
        assert _media_type_and_charset(actual_type) == _media_type_and_charset(expected_type), (
            f"{where}: Content-Type {actual_type!r}, expected {expected_type!r}"
        )
    if expected.body is not None:
        wanted = parse_results(expected.body.encode(), expected_type or "text/turtle", base_iri=base_iri)
        got = parse_results(response.body, response.headers.get("Content-Type") or "", base_iri=base_iri)
        difference = results_difference(wanted, got)
        assert difference is None, f"{where}: {difference}"


# --------------------------------------------------------------------------- graph-store-protocol/


def store_path(path: str) -> str:
    assert path.startswith("/gsp"), f"unexpected path {path!r} in the manifest"
    return "/store" + path.removeprefix("/gsp")


def test_the_gsp_manifests_have_every_test() -> None:
    assert len(GSP_TESTS) == 13
    assert {t.manifest.name for t in GSP_TESTS} == {"manifest-direct.ttl", "manifest-indirect.ttl"}


@pytest.mark.parametrize("test", [_xfail_if_known(t.iri, t, t.iri) for t in GSP_TESTS])
def test_graph_store_protocol(test: W3CTest, live_endpoint: LiveEndpoint) -> None:
    live_endpoint.reset()
    variables: dict[str, str] = {}  # mf:expectedLocation names → the Location headers received
    for number, request in enumerate(requests_of(test), 1):
        path, body = request.path, request.body
        for name, value in variables.items():
            path = path.replace(name, value)
            body = body.replace(name.encode(), value.encode()) if body is not None else None
        path = store_path(path)
        response = send(live_endpoint.base_url, request.method, path, request.headers, body)
        where = f"request {number} ({request.method} {path})"
        check_response(request.response, response, where, live_endpoint.base_url + path)
        if request.response.location_variable is not None:
            location = response.headers.get("Location")
            assert location, f"{where}: no Location header"
            variables[request.response.location_variable] = location


# --------------------------------------------------------------------------- http-rdf-update/ (prose)


@dataclass(frozen=True)
class ProseStep:
    """One test of the prose manifest: its request (with $GRAPHSTORE$/$HOST$/$NEWPATH$ left in)."""

    name: str  # the local name of the test IRI
    request: ManifestRequest
    setup: tuple[ManifestRequest, ...] = ()  # requests the prose presupposes (see the module docstring)


def _status(*codes: int) -> tuple[ExpectedStatus, ...]:
    return tuple(ExpectedStatus(code=code) for code in codes)


OK_OR_NO_CONTENT = _status(200, 204)
TURTLE_UTF8 = (("Content-Type", "text/turtle; charset=utf-8"),)
ACCEPT_TURTLE = (("Accept", "text/turtle"),)

PERSON_1_JOHN = """@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix v: <http://www.w3.org/2006/vcard/ns#> .

<http://$HOST$/$GRAPHSTORE$/person/1> a foaf:Person;
    foaf:businessCard [
        a v:VCard;
        v:fn "John Doe"
    ].
"""
PERSON_1_JANE = PERSON_1_JOHN.replace("John Doe", "Jane Doe")
ALICE = """@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix v: <http://www.w3.org/2006/vcard/ns#> .

[]  a foaf:Person;
    foaf:businessCard [
        a v:VCard;
        v:given-name "Alice"
    ] .
"""
PERSON_1_NAME = """@prefix foaf: <http://xmlns.com/foaf/0.1/> .

<http://$HOST$/$GRAPHSTORE$/person/1> foaf:name "Jane Doe" .
"""
MULTIPART_BOUNDARY = "a6fe4cd636164618814be9f8d3d1a0de"
MULTIPART = "\r\n".join(
    [
        f"--{MULTIPART_BOUNDARY}",
        'Content-Disposition: form-data; name="lastName.ttl"; filename="lastName.ttl"',
        "Content-Type: text/turtle; charset=utf-8",
        "",
        "@prefix foaf: <http://xmlns.com/foaf/0.1/> .",
        '<http://$HOST$/$GRAPHSTORE$/person/1> foaf:familyName "Doe" .',
        "",
        f"--{MULTIPART_BOUNDARY}",
        'Content-Disposition: form-data; name="firstName.ttl"; filename="firstName.ttl"',
        "Content-Type: text/turtle; charset=utf-8",
        "",
        "@prefix foaf: <http://xmlns.com/foaf/0.1/> .",
        '<http://$HOST$/$GRAPHSTORE$/person/1> foaf:givenName "Jane" .',
        "",
        f"--{MULTIPART_BOUNDARY}--",
        "",
    ]
)
PERSON_1_MERGED = """@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix v: <http://www.w3.org/2006/vcard/ns#> .

<http://$HOST$/$GRAPHSTORE$/person/1> a foaf:Person;
    foaf:name           "Jane Doe";
    foaf:givenName      "Jane";
    foaf:familyName     "Doe";
    foaf:businessCard [
        a               v:VCard;
        v:fn            "Jane Doe"
    ] .
"""


def _request(method: str, path: str, statuses, *, headers=(), body: str | None = None, response_body=None,
             response_headers=(), location=None) -> ManifestRequest:
    return ManifestRequest(
        method=method,
        path=path,
        headers=tuple(headers),
        body=None if body is None else body.encode(),
        response=ExpectedResponse(
            statuses=statuses, headers=tuple(response_headers), body=response_body, location_variable=location
        ),
    )


def _get_turtle(path: str, expected_body: str, *, accept: bool = True) -> ManifestRequest:
    return _request(
        "GET", path, _status(200), headers=ACCEPT_TURTLE if accept else (), response_body=expected_body,
        response_headers=TURTLE_UTF8,
    )


PERSON_1 = "$GRAPHSTORE$/person/1.ttl"
PROSE_STEPS: tuple[ProseStep, ...] = (
    ProseStep("put__initial_state", _request("PUT", PERSON_1, _status(201), headers=TURTLE_UTF8, body=PERSON_1_JOHN)),
    ProseStep(
        "get_of_put__initial_state",
        _get_turtle("$GRAPHSTORE$?graph=http://$HOST$/$GRAPHSTORE$/person/1.ttl", PERSON_1_JOHN),
    ),
    ProseStep(
        "put__graph_already_in_store",
        _request("PUT", PERSON_1, _status(204), headers=TURTLE_UTF8, body=PERSON_1_JANE),
    ),
    ProseStep("get_of_put__graph_already_in_store", _get_turtle(PERSON_1, PERSON_1_JANE)),
    ProseStep(
        "put__default_graph", _request("PUT", "$GRAPHSTORE$?default", _status(201), headers=TURTLE_UTF8, body=ALICE)
    ),
    ProseStep("get_of_put__default_graph", _get_turtle("$GRAPHSTORE$?default", ALICE)),
    ProseStep(
        "delete__existing_graph",
        _request("DELETE", "$GRAPHSTORE$/person/2.ttl", OK_OR_NO_CONTENT),
        setup=(_request("PUT", "$GRAPHSTORE$/person/2.ttl", _status(201), headers=TURTLE_UTF8, body=ALICE),),
    ),
    ProseStep("get_of_delete__existing_graph", _request("GET", "$GRAPHSTORE$/person/2.ttl", _status(404))),
    ProseStep("delete__nonexistent_graph", _request("DELETE", "$GRAPHSTORE$/person/2.ttl", _status(404))),
    ProseStep(
        "post__existing_graph", _request("POST", PERSON_1, OK_OR_NO_CONTENT, headers=TURTLE_UTF8, body=PERSON_1_NAME)
    ),
    ProseStep("get_of_post__existing_graph", _get_turtle(PERSON_1, PERSON_1_JOHN)),
    ProseStep(
        "post__multipart_formdata",
        _request(
            "POST",
            PERSON_1,
            OK_OR_NO_CONTENT,
            headers=(("Content-Type", f"multipart/form-data; boundary={MULTIPART_BOUNDARY}"),),
            body=MULTIPART,
        ),
    ),
    ProseStep("get_of_post__multipart_formdata", _get_turtle(PERSON_1, PERSON_1_MERGED, accept=False)),
    ProseStep(
        "post__create__new_graph",
        _request("POST", "$GRAPHSTORE$", _status(201), headers=TURTLE_UTF8, body=ALICE, location="$NEWPATH$"),
    ),
    ProseStep("get_of_post__create__new_graph", _get_turtle("$NEWPATH$", ALICE)),
    ProseStep("get_of_post__after_noop", _get_turtle("$NEWPATH$", ALICE)),
    ProseStep(
        "head_on_an_existing_graph", _request("HEAD", PERSON_1, _status(200), response_headers=TURTLE_UTF8)
    ),
    ProseStep("head_on_a_nonexisting_graph", _request("HEAD", "$GRAPHSTORE$/person/4.ttl", _status(404))),
)
PROSE_IRI = {test.iri.rsplit("#", 1)[-1]: test.iri for test in PROSE_TESTS}


def test_every_prose_test_is_encoded_in_manifest_order() -> None:
    assert [step.name for step in PROSE_STEPS] == [test.iri.rsplit("#", 1)[-1] for test in PROSE_TESTS]


class _ProseRun:
    """Sends prose requests with the placeholders filled in, remembering ``$NEWPATH$``."""

    def __init__(self, endpoint: LiveEndpoint):
        self.endpoint = endpoint
        self.host = urlsplit(endpoint.base_url).netloc
        self.variables = {"$GRAPHSTORE$": "store", "$HOST$": self.host}

    def fill(self, text: str) -> str:
        for name, value in self.variables.items():
            text = text.replace(name, value)
        return text

    def path(self, request: ManifestRequest) -> str:
        path = self.fill(request.path)
        if path.startswith("http://"):  # $NEWPATH$ is the absolute Location URL
            path = path.removeprefix(f"http://{self.host}")
        return path if path.startswith("/") else "/" + path

    def send(self, request: ManifestRequest) -> tuple[str, RawResponse]:
        path = self.path(request)
        body = self.fill(request.body.decode()).encode() if request.body is not None else None
        response = send(self.endpoint.base_url, request.method, path, request.headers, body)
        if request.response.location_variable is not None and response.headers.get("Location"):
            self.variables[request.response.location_variable] = response.headers["Location"]
        return path, response


@pytest.mark.parametrize(
    "position", [_xfail_if_known(PROSE_IRI[step.name], i, PROSE_IRI[step.name]) for i, step in enumerate(PROSE_STEPS)]
)
def test_graph_store_protocol_prose(position: int, live_endpoint: LiveEndpoint) -> None:
    live_endpoint.reset()
    run = _ProseRun(live_endpoint)
    for earlier in PROSE_STEPS[:position]:  # the state this test presupposes
        for request in (*earlier.setup, earlier.request):
            run.send(request)
    step = PROSE_STEPS[position]
    for request in step.setup:
        path, response = run.send(request)
        assert request.response.accepts(response.status), f"setup {request.method} {path}: {response.status}"
    path, response = run.send(step.request)
    expected = step.request.response
    if expected.location_variable is not None:
        assert response.headers.get("Location"), "no Location header"
    if expected.body is not None:
        expected = ExpectedResponse(expected.statuses, headers=expected.headers, body=run.fill(expected.body))
    check_response(expected, response, f"{step.request.method} {path}", live_endpoint.base_url + path)
