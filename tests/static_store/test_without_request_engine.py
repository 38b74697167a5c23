"""``static_store`` on its own: a ``StaticStore`` without a request engine, and one given a request engine
that is not cqels_endpoint's.

Without one, the store runs what pyoxigraph alone runs exactly, with the same change events as the
endpoint's store (``open_store``, the twin), and refuses the rest before writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store_write_paths import _without_blank_labels, data_requests

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.http.app import create_app
from cqels_endpoint.oxigraph.requests import open_store
from static_store import StaticStore
from static_store.errors import RemoteAccessError, RequestSyntaxError, StoreError
from static_store.events import WriteBatch
from static_store.shape import update_shape

EX = "http://example.org/"


def _outcome(store: StaticStore, text: str):
    """The change event of an update, or "refused" for a request pyoxigraph cannot parse."""
    try:
        event = store.update(text)
    except (QuerySyntaxError, RequestSyntaxError):
        return "refused"
    return None if event is None else (event.version, event.changes)


@settings(max_examples=100, deadline=None)
@given(st.lists(data_requests(), min_size=1, max_size=6))
def test_data_requests_match_the_endpoints_store(requests):
    with StaticStore() as alone, open_store() as twin:
        for text in requests:
            if update_shape(text).data_kind is None:  # only the endpoint's update engine runs it
                version, quads = alone.version, len(alone)
                with pytest.raises(StoreError, match="INSERT DATA and DELETE DATA requests only"):
                    alone.update(text)
                assert (alone.version, len(alone)) == (version, quads)
                continue
            assert _outcome(alone, text) == _outcome(twin, text)
        assert _without_blank_labels(alone) == _without_blank_labels(twin)
        assert alone.named_graphs() == twin.named_graphs()


@pytest.fixture
def alone():
    with StaticStore() as store:
        store.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 2 }} }}")
        yield store


def test_queries_run_alone(alone):
    with open_store() as twin:
        twin.load(ox.serialize(alone, format=ox.RdfFormat.N_QUADS), media_type="application/n-quads")
        for text in ("SELECT ?g ?o WHERE { GRAPH ?g { ?s ?p ?o } }", "SELECT (SUM(?o) AS ?n) WHERE { ?s ?p ?o }"):
            assert alone.query(text).serialize("application/sparql-results+json") == twin.query(text).serialize(
                "application/sparql-results+json"
            )


def test_service_needs_remote_access_alone(alone):
    text = "SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }"
    for run in (alone.query, alone.solutions):
        with pytest.raises(RemoteAccessError, match="SERVICE or LOAD needs remote access"):
            run(text)
    # Allowed, the query reaches pyoxigraph, whose failure to connect is the store's error.
    with pytest.raises(StoreError, match="query evaluation failed"):
        alone.query(text, allow_remote=True)


def test_a_refused_request_is_located_where_pyoxigraph_says(alone):
    with pytest.raises(RequestSyntaxError, match="error at 4:2") as raised:
        alone.query("SELECT * WHERE {\n  ?s ?p ?o .\n  FILTER(\n}")
    assert (raised.value.line, raised.value.column) == (4, 2)
    with pytest.raises(RequestSyntaxError) as raised:
        alone.update("INSERT DATA {\n <http://a> <http://b>\n}")
    assert raised.value.line == 3


@dataclass
class ClearDefault:
    """A request engine of the store's user that knows one Update request, ``CLEAR DEFAULT``."""

    asked: list

    one_step = True

    def check_query(self, text, base_iri, *, allow_remote):
        self.asked.append(("check", text))

    def prepare_update(self, text, base_iri, *, allow_remote):
        if text != "CLEAR DEFAULT":
            raise StoreError(f"unknown request {text!r}")
        return self

    def refusal(self, kind, message, text, base_iri, *, allow_remote, update):
        self.asked.append(("refused", kind, update))
        return StoreError(message)

    def run(self, store, batch: WriteBatch, **options):
        batch.clear(ox.DefaultGraph())


def test_a_request_engine_of_the_users():
    engine = ClearDefault([])
    store = StaticStore(requests=engine)
    store.update(f"INSERT DATA {{ <{EX}s> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}s> <{EX}p> 2 }} }}")
    event = store.update("CLEAR DEFAULT")
    assert (event.version, [(c.graph, c.added, c.removed) for c in event.changes]) == (2, [(None, 0, 1)])
    assert sorted(str(q.graph_name) for q in store) == [f"<{EX}g>"]
    store.query("ASK { ?s ?p ?o }")  # plain SPARQL: the engine is not asked
    with pytest.raises(StoreError):
        store.query("ASK { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }")  # checked, then refused by pyoxigraph
    with pytest.raises(StoreError):
        store.update("INSERT DATA { <http://a> }")
    assert engine.asked == [
        ("check", "ASK { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }"),
        ("refused", "OSError", False),
        ("refused", "SyntaxError", True),
    ]


def test_the_http_layer_answers_the_stores_own_errors_with_a_4xx(alone):
    client = create_app(alone, ServerConfig(memory=True)).test_client()
    response = client.get("/query", query_string={"query": "SELECT * WHERE {\n  ?s ?p ?o .\n  FILTER(\n}"})
    assert response.status_code == 400
    assert (response.get_json()["line"], response.get_json()["column"]) == (4, 2)
    # An IRI the HTTP layer's check lets through and pyoxigraph refuses: the store's InvalidGraphName.
    response = client.put("/store", query_string={"graph": "http://[::1"}, data=b"", content_type="text/turtle")
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("invalid graph IRI <http://[::1>: ")
