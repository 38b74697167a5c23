"""The static store: named graphs in pyoxigraph with change events, versions, journals and bulk loads.

A package of its own, on pyoxigraph and the standard library only (cqels_endpoint imports it,
never the reverse); its errors are ``static_store.errors``. Checks of SPARQL requests and Update
requests other than INSERT DATA / DELETE DATA are left to the ``RequestEngine`` the store is given
(``requests``; cqels_endpoint's is ``cqels_endpoint.oxigraph.requests.open_store``).

>>> from static_store import StaticStore
>>> with StaticStore() as store:
...     event = store.update('INSERT DATA { <http://ex.org/a> <http://ex.org/p> 1 }')
...     [(c.graph, c.added, c.removed) for c in event.changes], store.version
...     store.query('ASK { ?s ?p 1 }').boolean
([(None, 1, 0)], 1)
True
"""

from static_store.convert import DEFAULT_GRAPH
from static_store.events import ChangeEvent, GraphChange
from static_store.formats import (
    DATASET_FORMATS,
    GRAPH_FORMATS,
    GRAPH_MEDIA_TYPES,
    RDF_INPUT_MEDIA_TYPES,
    RESULTS_FORMATS,
    RESULTS_MEDIA_TYPES,
    MediaFormat,
)
from static_store.requests import PreparedUpdate, RequestEngine
from static_store.results import QueryResult
from static_store.store import StaticStore

__all__ = [
    "DATASET_FORMATS",
    "DEFAULT_GRAPH",
    "GRAPH_FORMATS",
    "GRAPH_MEDIA_TYPES",
    "RDF_INPUT_MEDIA_TYPES",
    "RESULTS_FORMATS",
    "RESULTS_MEDIA_TYPES",
    "ChangeEvent",
    "GraphChange",
    "MediaFormat",
    "PreparedUpdate",
    "QueryResult",
    "RequestEngine",
    "StaticStore",
]
