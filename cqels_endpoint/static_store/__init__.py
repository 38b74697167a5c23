"""The static store: every access to pyoxigraph (named graphs, change events, bulk load).

>>> from cqels_endpoint.static_store import StaticStore
>>> with StaticStore() as store:
...     event = store.update('INSERT DATA { <http://ex.org/a> <http://ex.org/p> 1 }')
...     [(c.graph, c.added, c.removed) for c in event.changes], store.version
...     store.query('ASK { ?s ?p 1 }').boolean
([(None, 1, 0)], 1)
True
"""

from cqels_endpoint.static_store.convert import DEFAULT_GRAPH
from cqels_endpoint.static_store.events import ChangeEvent, GraphChange
from cqels_endpoint.static_store.formats import (
    DATASET_FORMATS,
    GRAPH_FORMATS,
    GRAPH_MEDIA_TYPES,
    RDF_INPUT_MEDIA_TYPES,
    RESULTS_FORMATS,
    RESULTS_MEDIA_TYPES,
    MediaFormat,
)
from cqels_endpoint.static_store.results import QueryResult
from cqels_endpoint.static_store.store import StaticStore

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
    "QueryResult",
    "StaticStore",
]
