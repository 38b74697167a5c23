"""``cqels load --spark``: a large N-Triples/N-Quads file parsed and encoded on Spark, loaded in sorted runs.

Line-based syntaxes split anywhere between lines, so Spark reads the file as text lines and the
workers parse their partitions in parallel with pyoxigraph (Turtle, TriG or RDF/XML cannot be cut
like that, and are refused). Per quad a worker

- renames blank nodes as the normal load (pyoxigraph's ``Store.load``) does: one fresh blank node per
  label of the file, the same across all partitions, new to the store. The fresh label is a 128-bit
  keyed hash of the label under a random key drawn once per load: consistent without any shuffle,
  and as unlikely to meet an existing blank node as pyoxigraph's own random 128-bit labels;
- encodes each term (graph, subject, predicate, object) as a 64-bit hash of its N-Triples text: the
  same dictionary in every worker without a shuffle. Two terms with one code would mis-sort, so
  the load checks the dictionary for collisions before writing anything.

A malformed line anywhere rejects the whole load, naming its line number in the file, before
anything is written. The quads are then sorted by their codes (g, s, p, o), so each run of the sort
holds whole graphs and subjects together, and streamed to the driver one sorted run at a time into
one store transaction (``StaticStore.load_quads``): one change event, and a failure midway (an
executor lost) still writes nothing.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.errors import RdfSyntaxError, UnsupportedMediaType
from static_store import ChangeEvent, StaticStore
from static_store.convert import graph_name, graph_term
from static_store.formats import rdf_format, rdf_format_for_path

#: Quads per sorted run: one run is one partition of the sort, held by the driver while it is loaded.
RUN_QUADS = 100_000
#: Bytes of the file per parsing partition, so a large file is parsed by every core.
SPLIT_BYTES = 32 * 1024 * 1024
LINE_FORMATS = (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS)

# A parsed quad: (codes (g, s, p, o), its N-Quads line with renamed blank nodes, term texts, graph name).
# A rejected line: (None, line number in the file, reason, column).


def spark_load(
    store: StaticStore,
    path: str | Path,
    spark,
    *,
    media_type: str | None = None,
    graph: str | None = None,
    base_iri: str | None = None,
    progress: bool = False,
    run_quads: int = RUN_QUADS,
) -> ChangeEvent | None:
    """Load the N-Triples/N-Quads file ``path`` into ``store`` with the SparkSession ``spark``.

    Same content as ``store.load(path, graph=graph)`` up to blank node labels: triples (and the
    default-graph quads of N-Quads) go into ``graph``; named graphs keep their names. Raises
    ``RdfSyntaxError`` naming the first malformed line (nothing written), ``UnsupportedMediaType``
    for another syntax. ``progress`` shows a tqdm bar of the runs loaded. With a cluster master,
    ``path`` must be readable at the same path by every executor.
    """
    document = Path(path)
    fmt = line_format(document, media_type)
    if base_iri is None:
        base_iri = document.resolve().as_uri()
    store._graph(graph)  # validates the IRI as every other store write does, before any Spark job
    key = secrets.token_bytes(16)
    sc = spark.sparkContext
    partitions = max(sc.defaultParallelism, math.ceil(document.stat().st_size / SPLIT_BYTES))
    lines = sc.textFile(document.resolve().as_uri(), minPartitions=partitions)

    # pyoxigraph's formats and terms do not pickle: the workers get their names.
    media = fmt.media_type

    def parse(rows: Iterable[tuple[str, int]]) -> Iterator[tuple]:
        return parse_partition(rows, media, base_iri, graph, key)

    parsed = lines.zipWithIndex().mapPartitions(parse).persist()
    try:
        count, error, graphs = parsed.aggregate((0, None, frozenset()), _tally, _merge_tallies)
        if error is not None:
            _, line, reason, column = error
            where = f"line {line}" + (f", column {column}" if column is not None else "")
            msg = f"malformed {fmt.name} file {document}: {reason} ({where}); nothing was loaded"
            raise RdfSyntaxError(msg, line, column)
        _check_dictionary(parsed)
        runs = max(1, math.ceil(count / run_quads))
        blobs = parsed.map(lambda row: (row[0], row[1])).sortByKey(numPartitions=runs).mapPartitions(_run_text)
        return store.load_quads(_runs(blobs, document.name, progress), graphs)
    finally:
        parsed.unpersist()


def line_format(path: Path, media_type: str | None = None) -> ox.RdfFormat:
    """The syntax of ``path``, if Spark can split it into lines: checked before a session starts."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    fmt = rdf_format(media_type) if media_type is not None else rdf_format_for_path(path)
    if fmt not in LINE_FORMATS:
        msg = (
            f"--spark loads N-Triples and N-Quads only, which split between any two lines; {fmt.name} "
            f"cannot be cut into independent parts: load {path.name} without --spark, or convert it "
            "to N-Triples/N-Quads first"
        )
        raise UnsupportedMediaType(msg)
    return fmt


def parse_partition(
    rows: Iterable[tuple[str, int]], media_type: str, base_iri: str, graph: str | None, key: bytes
) -> Iterator[tuple]:
    """Parse one partition of ``(line, 0-based line index)`` rows in one pyoxigraph call; on a
    syntax error yield only the rejection of that line (the load stops at the first one anyway).
    Default-graph quads go into ``graph``."""
    rows = list(rows)
    if not rows:
        return
    fmt = ox.RdfFormat.from_media_type(media_type)
    target = graph_term(graph)
    first = rows[0][1]
    text = "\n".join(line for line, _ in rows) + "\n"
    try:
        quads = list(ox.parse(text, format=fmt, base_iri=base_iri))
    except SyntaxError as error:
        # The partition's text starts at the file's line first + 1.
        local = error.lineno or 1
        line = rows[min(local, len(rows)) - 1][0]
        reason, column = _line_error(line, fmt, base_iri, error)
        yield None, first + local, reason, column
        return
    renames: dict[str, str] = {}
    for quad in quads:
        terms = (
            target if isinstance(quad.graph_name, ox.DefaultGraph) else _rename(quad.graph_name, key, renames),
            _rename(quad.subject, key, renames),
            quad.predicate,
            _rename(quad.object, key, renames),
        )
        texts = tuple("" if isinstance(term, ox.DefaultGraph) else str(term) for term in terms)
        g, s, p, o = texts
        nquad = f"{s} {p} {o} {g} ." if g else f"{s} {p} {o} ."
        yield tuple(_code(t) for t in texts), nquad, texts, graph_name(terms[0])


def _line_error(line: str, fmt: ox.RdfFormat, base_iri: str, error: SyntaxError) -> tuple[str, int | None]:
    """The reason and column of the error on ``line``, parsed alone so the position is the line's own."""
    try:
        list(ox.parse(line + "\n", format=fmt, base_iri=base_iri))
    except SyntaxError as alone:
        error = alone
    message = error.msg if isinstance(error.msg, str) else str(error)
    # pyoxigraph's message starts with its own position ("Parser error at line 1 between ...: why").
    reason = message.split(": ", 1)[1] if message.startswith("Parser error") and ": " in message else message
    return reason, error.offset


def _rename(term, key: bytes, renames: dict[str, str]):
    if isinstance(term, ox.BlankNode):
        label = renames.get(term.value)
        if label is None:
            label = hashlib.blake2b(term.value.encode(), digest_size=16, key=key).hexdigest()
            renames[term.value] = label
        return ox.BlankNode(label)
    if isinstance(term, ox.Triple):  # an RDF 1.2 triple term may hold blank nodes too
        return ox.Triple(_rename(term.subject, key, renames), term.predicate, _rename(term.object, key, renames))
    return term


def _code(text: str) -> int:
    """The 64-bit dictionary code of a term (its N-Triples text; the default graph is "")."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def _tally(tally: tuple, row: tuple) -> tuple:
    count, error, graphs = tally
    if row[0] is None:
        return count, row if error is None or row[1] < error[1] else error, graphs
    return count + 1, error, graphs if row[3] in graphs else graphs | {row[3]}


def _merge_tallies(left: tuple, right: tuple) -> tuple:
    errors = [e for e in (left[1], right[1]) if e is not None]
    return left[0] + right[0], min(errors, key=lambda e: e[1]) if errors else None, left[2] | right[2]


def _check_dictionary(parsed) -> None:
    """Refuse to load if two different terms got the same code (which would interleave their quads)."""

    def pairs(row: tuple) -> Iterator[tuple[int, str]]:
        return zip(row[0], row[2])

    def same(a, b):
        # A tuple marks a collision and is kept; equal texts are the same term.
        return a if isinstance(a, tuple) or a == b else (a, b)

    clash = parsed.flatMap(pairs).reduceByKey(same).filter(lambda kv: isinstance(kv[1], tuple)).take(1)
    if clash:
        code, (a, b) = clash[0][0], clash[0][1][:2]
        msg = f"two terms share the 64-bit code {code}: {a} and {b}; load the file without --spark"
        raise RdfSyntaxError(msg)


def _run_text(rows: Iterable[tuple]) -> Iterator[str]:
    """One sorted run as one N-Quads document (its rows arrive sorted by code)."""
    yield "".join(f"{nquad}\n" for _, nquad in rows)


def _runs(blobs, name: str, progress: bool) -> Iterator[ox.Quad]:
    """The quads of the sorted runs, one run at a time (the next one fetched meanwhile)."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=blobs.getNumPartitions(), unit="run", desc=f"loading {name}")
    try:
        for blob in blobs.toLocalIterator(prefetchPartitions=True):
            # The labels are already the fresh ones, kept as they are (ox.parse does not rename).
            yield from ox.parse(blob, format=ox.RdfFormat.N_QUADS)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
