"""RDF input: parsing request bodies into quads and bulk-loading files, with exact counts.

Two paths, because they trade memory differently:

- ``parse_graph`` reads a Graph Store Protocol body or a ``LOAD``ed document into a list of
  pyoxigraph quads, so the caller writes them through a ``WriteBatch`` (exact set differences,
  undoable inside an Update request).
- ``bulk_load`` hands a whole file to pyoxigraph's bulk loader, so that a syntax error anywhere
  leaves the store untouched: into empty graphs, by emptying them again; otherwise after a first
  parse that writes nothing. It learns the exact number of new quads per graph by counting the
  touched graphs before and after (in Rust, with SPARQL ``COUNT``). A load only adds, so
  ``after − before`` is exactly the set difference; the caller holds the write lock, so nothing
  else moves the counts meanwhile.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit
from urllib.request import Request, url2pathname, urlopen

import pyoxigraph as ox

from static_store.convert import GraphTerm, graph_name
from static_store.errors import RdfSyntaxError, RemoteAccessError, UnsupportedMediaType
from static_store.formats import GRAPH_MEDIA_TYPES, essence, rdf_format, rdf_format_for_path

#: Seconds a LOAD waits for a remote server.
FETCH_TIMEOUT = 30.0
# Media types servers send for "some file" — then the IRI's extension says more.
_GENERIC_MEDIA_TYPES = {"text/plain", "application/octet-stream", "binary/octet-stream"}

_POSITION = re.compile(r"line (\d+)(?:,? column (\d+)| between columns (\d+))?")
_NAMED_GRAPHS_REFUSED = "Named graphs are not allowed"


def rdf_syntax_error(error: SyntaxError, fmt: ox.RdfFormat, source: str = "data") -> RdfSyntaxError:
    """``RdfSyntaxError`` with the 1-based line/column pyoxigraph reported (in its attributes or message)."""
    message = error.msg if isinstance(error.msg, str) else str(error)
    line, column = error.lineno, error.offset
    if line is None:
        found = _POSITION.search(message)
        if found is not None:
            line = int(found.group(1))
            column_text = found.group(2) or found.group(3)
            column = int(column_text) if column_text else None
    if message == _NAMED_GRAPHS_REFUSED:
        message = f"the {fmt.name} {source} holds named graphs, but it must be a single graph here"
    elif line is not None and f"line {line}" not in message:
        message = f"{message} (line {line}" + (f", column {column})" if column is not None else ")")
    return RdfSyntaxError(f"malformed {fmt.name} {source}: {message}", line, column)


def parse_graph(
    data: bytes | str, fmt: ox.RdfFormat, graph: GraphTerm, base_iri: str | None = None, source: str = "data"
) -> list[ox.Quad]:
    """The triples of one RDF document as quads in ``graph``, blank nodes fresh.

    Named graphs in a TriG/N-Quads document are refused: the document is meant to become one graph.
    Raises ``RdfSyntaxError`` (with line/column) before anything could be written.
    """
    if isinstance(data, str):
        data = _utf8(data, fmt, source)
    try:
        return [
            ox.Quad(quad.subject, quad.predicate, quad.object, graph)
            for quad in ox.parse(
                data, format=fmt, base_iri=base_iri, without_named_graphs=True, rename_blank_nodes=True
            )
        ]
    except SyntaxError as error:
        raise rdf_syntax_error(error, fmt, source) from None


def _utf8(text: str, fmt: ox.RdfFormat, source: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (which a JSON ``\\ud800`` escape yields) is an
    ``RdfSyntaxError`` at its position: pyoxigraph cannot take such a string at all."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        line = text.count("\n", 0, error.start) + 1
        column = error.start - text.rfind("\n", 0, error.start)
        message = f"an unpaired surrogate U+{ord(text[error.start]):04X} is no character (line {line}, column {column})"
        raise RdfSyntaxError(f"malformed {fmt.name} {source}: {message}", line, column) from None


def fetch_document(iri: str, *, allow_remote: bool, allow_files: bool) -> tuple[bytes, ox.RdfFormat]:
    """The bytes and RDF syntax of the document a ``LOAD`` names.

    ``file:`` IRIs read the server's file system and need ``allow_files``; ``http(s):`` IRIs need
    ``allow_remote`` (``RemoteAccessError`` otherwise); other schemes are a ``ValueError``.
    """
    parts = urlsplit(iri)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if not allow_files:
            msg = f"LOAD <{iri}> would read the server's file system, which is disabled; use cqels load or the /store endpoint"
            raise RemoteAccessError(msg)
        path = Path(url2pathname(parts.path))
        return path.read_bytes(), rdf_format_for_path(path)
    if scheme in ("http", "https"):
        if not allow_remote:
            msg = f"LOAD <{iri}> needs remote access, which is disabled; enable --allow-remote"
            raise RemoteAccessError(msg)
        accept = ", ".join(GRAPH_MEDIA_TYPES) + ", */*;q=0.1"
        with urlopen(Request(iri, headers={"Accept": accept}), timeout=FETCH_TIMEOUT) as response:
            data = response.read()
            media_type = essence(response.headers.get_content_type())
        if media_type in _GENERIC_MEDIA_TYPES:
            return data, rdf_format_for_path(parts.path)
        try:
            return data, rdf_format(media_type)
        except UnsupportedMediaType:
            return data, rdf_format_for_path(parts.path)
    msg = f"LOAD reads http, https and file IRIs, not {scheme or 'relative'} IRIs like <{iri}>"
    raise ValueError(msg)


class ProgressReader(io.RawIOBase):
    """A binary reader that advances a tqdm bar by the bytes read through it."""

    def __init__(self, raw: BinaryIO, bar):
        self._raw = raw
        self._bar = bar

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._raw.readinto(buffer)
        if count:
            self._bar.update(count)
        return count or 0


def graph_sizes(store: ox.Store, graphs: Iterable[GraphTerm] | None = None) -> dict[GraphTerm, int]:
    """Number of quads per graph: of ``graphs``, or of every graph (default included) when None."""
    if graphs is not None:
        return {g: _count(store, g) for g in graphs}
    sizes: dict[GraphTerm, int] = {ox.DefaultGraph(): _count(store, ox.DefaultGraph())}
    query = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
    for solution in store.query(query):
        sizes[solution["g"]] = int(solution["n"].value)
    return sizes


def _count(store: ox.Store, graph: GraphTerm) -> int:
    # ``default_graph`` makes any graph (a blank-node one too) the query's default graph.
    solutions = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", default_graph=graph)
    return int(next(iter(solutions))["n"].value)


def bulk_load(
    store: ox.Store,
    source: Path | bytes,
    fmt: ox.RdfFormat,
    graph: GraphTerm,
    base_iri: str | None,
    progress: bool,
) -> dict[str | None, tuple[int, int]]:
    """Load a whole document with pyoxigraph's bulk loader; returns ``{graph: (added, 0)}`` for the graphs it grew.

    Triples go into ``graph``; the named graphs of a TriG/N-Quads document keep their names. The bulk
    loader writes as it parses, and a syntax error anywhere must still leave the store as it was.
    When every graph the document can touch is empty (``graph``, or the whole store for a dataset
    syntax: the first load of a store), the document is parsed once, by the loader, and a syntax
    error is undone by emptying those graphs again (one call each). Otherwise it is parsed once
    before (each quad dropped as it comes, its graph noted), which is slower but writes nothing until
    it is known good; only the graphs it names are counted before and after, not the whole store.
    """
    # A triple syntax can only touch ``graph``; a dataset syntax may touch any graph.
    touched = None if fmt.supports_datasets else [graph]
    undoable = _empty(store, touched)
    size = source.stat().st_size if isinstance(source, Path) else len(source)
    bar = _progress_bar(size if undoable else 2 * size, source, progress)  # one or two passes over the bytes
    named_before = set(store.named_graphs()) if undoable else set()
    before: dict[GraphTerm, int] = {}
    try:
        if not undoable:
            with _open(source) as raw:
                named = {quad.graph_name for quad in ox.parse(_reader(raw, bar), format=fmt, base_iri=base_iri)}
            # The loader puts the document's default graph into ``graph``; a blank node graph name
            # may be renamed by it, so such a document has every graph counted.
            if touched is None and not any(isinstance(name, ox.BlankNode) for name in named):
                touched = [graph if isinstance(name, ox.DefaultGraph) else name for name in named]
            before = graph_sizes(store, touched)
        with _open(source) as raw:
            store.bulk_load(_reader(raw, bar), format=fmt, base_iri=base_iri, to_graph=graph)
    except SyntaxError as error:
        if undoable:
            _empty_again(store, touched, named_before)
        raise rdf_syntax_error(error, fmt, _describe(source)) from None
    finally:
        if bar is not None:
            bar.close()
    return growth(before, graph_sizes(store, touched))


def _empty(store: ox.Store, graphs: list[GraphTerm] | None) -> bool:
    """Whether ``graphs`` (the whole store when None) hold no quad, without counting them."""
    if graphs is None:
        return next(iter(store), None) is None
    return all(next(store.quads_for_pattern(None, None, None, g), None) is None for g in graphs)


def _empty_again(store: ox.Store, graphs: list[GraphTerm] | None, named_before: set[ox.NamedNode | ox.BlankNode]) -> None:
    """Undo a failed load into empty graphs: empty ``graphs`` again (every graph when None), and
    forget the named graphs the load made."""
    for graph in graphs if graphs is not None else [ox.DefaultGraph(), *store.named_graphs()]:
        if graph in named_before or isinstance(graph, ox.DefaultGraph):
            store.clear_graph(graph)
        else:
            store.remove_graph(graph)


def _reader(raw: BinaryIO, bar) -> BinaryIO:
    return ProgressReader(raw, bar) if bar is not None else raw


def growth(before: dict[GraphTerm, int], after: dict[GraphTerm, int]) -> dict[str | None, tuple[int, int]]:
    """``{graph: (added, 0)}`` for the graphs an add-only write grew, from ``graph_sizes`` before and after it."""
    return {
        graph_name(g): (count - before.get(g, 0), 0) for g, count in after.items() if count != before.get(g, 0)
    }


def _open(source: Path | bytes) -> BinaryIO:
    return source.open("rb") if isinstance(source, Path) else io.BytesIO(source)


def _describe(source: Path | bytes) -> str:
    return f"file {source}" if isinstance(source, Path) else "data"


def _progress_bar(size: int, source: Path | bytes, progress: bool):
    if not progress:
        return None
    from tqdm import tqdm

    label = source.name if isinstance(source, Path) else "data"
    return tqdm(total=size, unit="B", unit_scale=True, unit_divisor=1024, desc=f"loading {label}")
