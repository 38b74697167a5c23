"""``CqelsRequests``: the project's parser, checks and Update engine as a ``StaticStore``'s request engine.

>>> from cqels_endpoint.oxigraph.requests import open_store
>>> with open_store() as store:
...     _ = store.update('INSERT DATA { <http://ex.org/a> <http://ex.org/p> 1 }')
...     event = store.update('DELETE { ?s ?p 1 } INSERT { ?s ?p 2 } WHERE { ?s ?p 1 }')
...     [(c.graph, c.added, c.removed) for c in event.changes], store.version
([(None, 1, 1)], 2)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import pyoxigraph as ox

from cqels_endpoint.oxigraph.checks import check_request, evaluation_error
from cqels_endpoint.oxigraph.update import UpdateRequest
from cqels_endpoint.query import ast
from cqels_endpoint.query.parser import parse_query, parse_update
from static_store import StaticStore
from static_store.events import WriteBatch

# One-shot queries are parsed with streams refused: the error then points to /queries/{name}.
_parse_one_shot_query = partial(parse_query, allow_streams=False)


class CqelsRequests:
    """Requests read by the project's parser: located errors for what pyoxigraph cannot run (a
    STREAM, a relative IRI, an unknown function…), the remote-access policy, and Update requests
    carried out by ``update.UpdateRequest``."""

    def check_query(self, text: str, base_iri: str | None, *, allow_remote: bool) -> None:
        check_request(_parse_one_shot_query(text, base_iri), text, allow_remote=allow_remote)

    def prepare_update(self, text: str, base_iri: str | None, *, allow_remote: bool) -> ParsedUpdate:
        parsed = parse_update(text, base_iri)
        check_request(parsed, text, allow_remote=allow_remote)
        return ParsedUpdate(parsed)

    def refusal(
        self, kind: str, message: str, text: str, base_iri: str | None, *, allow_remote: bool, update: bool
    ) -> Exception:
        """The parser and checks locate what they find wrong; otherwise pyoxigraph's own message, located."""
        parsed = (parse_update if update else _parse_one_shot_query)(text, base_iri)
        check_request(parsed, text, allow_remote=allow_remote)
        return evaluation_error(kind, message, text, parsed)


@dataclass(frozen=True)
class ParsedUpdate:
    update: ast.Update

    @property
    def one_step(self) -> bool:
        """Whether the request needs no undoing (``WriteBatch``): one operation, which is one
        pyoxigraph transaction (a CLEAR/DROP of ALL or NAMED graphs too), so nothing after it can fail."""
        return len(self.update.operations) == 1

    def run(
        self,
        store: ox.Store,
        batch: WriteBatch,
        *,
        using_graph_uris: Sequence[str] | None,
        using_named_graph_uris: Sequence[str] | None,
        allow_remote: bool,
        allow_files: bool,
        custom_functions: Mapping[ox.NamedNode, Callable[..., object]] | None,
    ) -> None:
        UpdateRequest(
            store,
            batch,
            self.update,
            using_graph_uris=using_graph_uris,
            using_named_graph_uris=using_named_graph_uris,
            allow_remote=allow_remote,
            allow_files=allow_files,
            custom_functions=custom_functions,
        ).run()


CQELS_REQUESTS = CqelsRequests()


def open_store(path: str | os.PathLike | None = None) -> StaticStore:
    """A ``StaticStore`` (in memory, or on disk in the directory ``path``) whose requests go through
    the project's parser: the store the endpoint, the command line and the engine use."""
    return StaticStore(path, requests=CQELS_REQUESTS)
