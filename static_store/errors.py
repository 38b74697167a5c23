"""The exceptions of the static store: one root, ``StoreError``.

``cqels_endpoint.errors`` re-exports these classes (the same objects), so code catching
``cqels_endpoint.errors.RdfSyntaxError`` catches what the store raises.
"""

from __future__ import annotations


class StoreError(Exception):
    """Root of every error the static store raises on purpose (bad RDF, unknown graph, I/O)."""


class LocatedStoreError(StoreError):
    """A store error that points into the request text: ``line``/``column`` are 1-based, None when unknown."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column

    def to_json(self) -> dict:
        return {"error": str(self), "line": self.line, "column": self.column}


class RdfSyntaxError(LocatedStoreError):
    """Malformed RDF in a load or a GSP body; the whole batch was rejected, nothing written."""


class RequestSyntaxError(LocatedStoreError):
    """A query or update pyoxigraph refused, located where pyoxigraph's message says, when the store
    has no request engine to explain it (``requests``)."""


class UpdateError(LocatedStoreError):
    """A SPARQL Update operation that cannot be carried out (CREATE of an existing graph, DROP of a
    missing one without SILENT, a LOAD that fails, a dataset given twice); the whole request was
    rolled back. ``line``/``column`` locate the operation in the request.
    """


class GraphNotFound(StoreError):
    """A Graph Store Protocol request named a graph the store does not have."""


class InvalidGraphName(StoreError):
    """A graph named by a string that is neither an absolute IRI nor ``_:`` and a blank node label."""


class UnsupportedRequest(StoreError):
    """A request the store has no engine for: without a request engine, an Update request other
    than INSERT DATA and DELETE DATA (over HTTP: 501, the server's configuration, not the request)."""


class UnsupportedMediaType(StoreError):
    """An RDF or results media type the store cannot read or write."""


class RemoteAccessError(StoreError):
    """``LOAD``/``SERVICE`` to a remote IRI while remote access is disabled."""


class QueryTimeoutError(StoreError):
    """A one-shot query ran past its timeout and was stopped."""
