"""What the store leaves to a SPARQL engine of its user's: the ``RequestEngine`` a ``StaticStore`` is given.

pyoxigraph parses and runs SPARQL itself, but it cannot say what an Update request changed, nor
tell a local ``SERVICE`` or ``LOAD`` from a remote one before it runs it, and it reports most
refusals without a position. A store given a ``RequestEngine`` (cqels_endpoint gives one built on
its parser: ``cqels_endpoint.oxigraph.requests``) asks it for these. A store without one
(``PYOXIGRAPH_ONLY``) runs what pyoxigraph alone runs exactly: queries, INSERT DATA and DELETE
DATA, the Graph Store operations and loads; it refuses any other Update request, and a query naming
SERVICE or LOAD unless remote access is allowed (it cannot see where they would reach).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import pyoxigraph as ox

from static_store.errors import RemoteAccessError, RequestSyntaxError, StoreError, UnsupportedRequest
from static_store.events import WriteBatch

# pyoxigraph's syntax errors say "error at 3:14: …" without SyntaxError attributes.
_POSITION = re.compile(r"at (\d+):(\d+)")


class PreparedUpdate(Protocol):
    """An Update request parsed and checked, ready to run.

    ``one_step``: one operation, which needs no undoing (``WriteBatch``); ``run`` carries the request
    out on ``store`` through ``batch`` (every write, so that the batch knows the exact change).
    """

    one_step: bool

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
    ) -> None: ...


class RequestEngine(Protocol):
    def check_query(self, text: str, base_iri: str | None, *, allow_remote: bool) -> None:
        """Raise for a query naming SERVICE or LOAD (``shape``) that pyoxigraph must not run."""

    def prepare_update(self, text: str, base_iri: str | None, *, allow_remote: bool) -> PreparedUpdate:
        """An Update request other than INSERT DATA / DELETE DATA, parsed and checked; raise if refused."""

    def refusal(
        self, kind: str, message: str, text: str, base_iri: str | None, *, allow_remote: bool, update: bool
    ) -> Exception:
        """The error for a request pyoxigraph refused: ``kind`` names pyoxigraph's exception class."""


def pyoxigraph_position(message: str) -> tuple[int, int] | None:
    """The 1-based (line, column) a pyoxigraph syntax error names in its message, if any."""
    found = _POSITION.search(message)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


class PyoxigraphOnly:
    """The requests of a store without a request engine: what pyoxigraph alone can run exactly."""

    def check_query(self, text: str, base_iri: str | None, *, allow_remote: bool) -> None:
        if not allow_remote:
            msg = "a query naming SERVICE or LOAD needs remote access, which is disabled (allow_remote), or a request engine to check it"
            raise RemoteAccessError(msg)

    def prepare_update(self, text: str, base_iri: str | None, *, allow_remote: bool) -> PreparedUpdate:
        msg = "a store without a request engine runs INSERT DATA and DELETE DATA requests only; give it a RequestEngine"
        raise UnsupportedRequest(msg)

    def refusal(
        self, kind: str, message: str, text: str, base_iri: str | None, *, allow_remote: bool, update: bool
    ) -> Exception:
        if kind == "SyntaxError":
            line, column = pyoxigraph_position(message) or (None, None)
            return RequestSyntaxError(f"pyoxigraph cannot evaluate this request: {message}", line, column)
        return StoreError(f"{'update' if update else 'query'} evaluation failed: {message}")


PYOXIGRAPH_ONLY = PyoxigraphOnly()
