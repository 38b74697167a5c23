"""Reading SPARQL query results and comparing them the way the W3C SPARQL test suites require.

Results of every kind the suites use are read into three small shapes: ``Solutions`` (a SELECT),
``Boolean`` (an ASK) and ``Graph`` (a CONSTRUCT/DESCRIBE). Expected results come as SPARQL XML
(``.srx``), JSON (``.srj``), TSV, CSV, or RDF (``.ttl``/``.rdf``) holding either a graph or a result
set in the DAWG result-set vocabulary; actual results come from an HTTP response body and its
Content-Type. pyoxigraph parses everything except CSV (lossy, so pyoxigraph refuses it) and the
result-set vocabulary, which are read here.

``results_difference(expected, actual, ...)`` is None when the two are equal under the W3C rules:

* solutions are compared as bags (duplicates count) up to a consistent renaming of blank nodes,
  i.e. there must be one bijection between the blank nodes of the two results that maps the
  actual bag onto the expected bag; "any blank node matches any other" is not enough;
* RDF terms are equal when they are the same term (lexical form, datatype and language tag);
* graphs are compared for isomorphism (the same bijection search over triples, as sets);
* with ``order_by`` (the variables each top-level ORDER BY condition mentions), order counts,
  but only as far as the results can show it: solutions may permute among ties of the ORDER BY
  keys (see ``_order_key`` and ``_order_blocks``);
* with ``lax_cardinality`` (``mf:LaxCardinality``, the REDUCED tests) solutions compare as sets.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
Row = tuple  # a solution (terms or None for unbound, aligned with the variables) or a triple

RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

SPARQL_JSON = "application/sparql-results+json"
SPARQL_XML = "application/sparql-results+xml"
SPARQL_TSV = "text/tab-separated-values"
SPARQL_CSV = "text/csv"
TURTLE = "text/turtle"
N_TRIPLES = "application/n-triples"
RDF_XML = "application/rdf+xml"

# The media type of each result-file extension the suites use; also what to ask an endpoint for.
MEDIA_TYPE_OF_EXTENSION = {
    ".srj": SPARQL_JSON,
    ".srx": SPARQL_XML,
    ".tsv": SPARQL_TSV,
    ".csv": SPARQL_CSV,
    ".ttl": TURTLE,
    ".nt": N_TRIPLES,
    ".rdf": RDF_XML,
}


@dataclass(frozen=True)
class Solutions:
    """A SELECT result: ``rows`` in document order, each aligned with ``variables`` (None = unbound)."""

    variables: tuple[str, ...]
    rows: tuple[Row, ...]

    @classmethod
    def of(cls, variables: Sequence[str], bindings: Iterable[dict[str, Term]]) -> Solutions:
        """Build from one dict per solution (variable name → term), e.g. in tests."""
        variables = tuple(variables)
        return cls(variables, tuple(tuple(b.get(v) for v in variables) for b in bindings))

    def columns(self, variables: Sequence[str]) -> tuple[Row, ...]:
        """The rows restricted to ``variables`` (in that order)."""
        positions = [self.variables.index(v) for v in variables]
        return tuple(tuple(row[p] for p in positions) for row in self.rows)


@dataclass(frozen=True)
class Boolean:
    """An ASK result."""

    value: bool


@dataclass(frozen=True)
class Graph:
    """A CONSTRUCT/DESCRIBE result: a set of (subject, predicate, object) triples."""

    triples: frozenset[tuple[Term, Term, Term]]


Results = Solutions | Boolean | Graph


# --------------------------------------------------------------------------- reading


def read_expected(path: Path) -> Results:
    """An expected-results file of the W3C suites, its format chosen by its extension.

    Relative IRIs in RDF files resolve against the file's own IRI, as the manifests do.
    """
    try:
        media_type = MEDIA_TYPE_OF_EXTENSION[path.suffix]
    except KeyError:
        msg = f"no result format known for {path.name}; expected one of {sorted(MEDIA_TYPE_OF_EXTENSION)}"
        raise ValueError(msg) from None
    return parse_results(path.read_bytes(), media_type, base_iri=path.as_uri())


def parse_results(data: bytes, media_type: str, *, base_iri: str | None = None) -> Results:
    """Query results serialised as ``media_type`` (a Content-Type value; parameters are ignored)."""
    essence = media_type.split(";", 1)[0].strip().lower()
    if essence == SPARQL_CSV:
        return parse_csv_results(data)
    results_format = ox.QueryResultsFormat.from_media_type(essence)
    if results_format is not None:
        return _from_pyoxigraph(ox.parse_query_results(data, results_format))
    rdf_format = ox.RdfFormat.from_media_type(essence)
    if rdf_format is not None:
        return parse_rdf_results(data, rdf_format, base_iri=base_iri)
    msg = f"cannot read query results of media type {media_type!r}"
    raise ValueError(msg)


def _from_pyoxigraph(parsed: ox.QuerySolutions | ox.QueryBoolean) -> Solutions | Boolean:
    if isinstance(parsed, ox.QueryBoolean):
        return Boolean(bool(parsed))
    variables = tuple(v.value for v in parsed.variables)
    return Solutions(variables, tuple(tuple(solution) for solution in parsed))


def parse_csv_results(data: bytes) -> Solutions:
    """SPARQL 1.1 CSV results, read as the format allows (it is lossy, so pyoxigraph refuses it).

    CSV drops the kind of every term: IRIs, literals of any datatype and language all become bare
    strings. So every cell is read as a simple literal, except ``_:label`` (a blank node, the only
    kind CSV marks) and an empty cell (unbound, which CSV cannot tell from the empty string). Compare
    CSV only with CSV read the same way: the W3C CSV tests compare CSV output with CSV.
    """
    reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        msg = "CSV results without a header line"
        raise ValueError(msg) from None
    rows = []
    for line_number, cells in enumerate(reader, start=2):
        if len(cells) != len(header):
            msg = f"CSV results line {line_number}: {len(cells)} cells for {len(header)} variables"
            raise ValueError(msg)
        rows.append(tuple(_csv_cell(cell) for cell in cells))
    return Solutions(tuple(header), tuple(rows))


def _csv_cell(cell: str) -> Term | None:
    if cell == "":
        return None
    if cell.startswith("_:"):
        return ox.BlankNode(cell[2:])
    return ox.Literal(cell)


def parse_rdf_results(data: bytes, rdf_format: ox.RdfFormat, *, base_iri: str | None = None) -> Results:
    """An RDF document: a result set in the DAWG result-set vocabulary (``rs:ResultSet``), else a graph."""
    triples = [(q.subject, q.predicate, q.object) for q in ox.parse(data, rdf_format, base_iri=base_iri)]
    result_sets = [s for s, p, o in triples if p.value == RDF_TYPE and o == ox.NamedNode(RS + "ResultSet")]
    if not result_sets:
        return Graph(frozenset(triples))
    if len(result_sets) > 1:
        msg = f"{len(result_sets)} rs:ResultSet nodes in one results document"
        raise ValueError(msg)
    return _result_set(result_sets[0], triples)


def _result_set(root: Term, triples: list[tuple[Term, Term, Term]]) -> Solutions | Boolean:
    """Read ``rs:boolean`` or ``rs:resultVariable``/``rs:solution [rs:binding […]; rs:index n]``."""
    objects: dict[tuple[Term, str], list[Term]] = defaultdict(list)
    for s, p, o in triples:
        objects[(s, p.value)].append(o)

    def one(subject: Term, name: str) -> Term | None:
        found = objects.get((subject, RS + name), [])
        if len(found) > 1:
            msg = f"{len(found)} values of rs:{name} on one node"
            raise ValueError(msg)
        return found[0] if found else None

    boolean = one(root, "boolean")
    if boolean is not None:
        return Boolean(boolean.value == "true")
    variables = [v.value for v in objects.get((root, RS + "resultVariable"), [])]
    solutions = []
    for solution in objects.get((root, RS + "solution"), []):
        bindings = {}
        for binding in objects.get((solution, RS + "binding"), []):
            bindings[one(binding, "variable").value] = one(binding, "value")
        index = one(solution, "index")
        solutions.append((int(index.value) if index is not None else None, bindings))
    if any(index is not None for index, _ in solutions):
        if any(index is None for index, _ in solutions):
            msg = "a result set where only some solutions have an rs:index"
            raise ValueError(msg)
        solutions.sort(key=lambda item: item[0])
    # rs:resultVariable is a set in RDF, so its order carries nothing; sort for a stable shape.
    names = sorted(set(variables).union(*(b.keys() for _, b in solutions)))
    return Solutions.of(names, (b for _, b in solutions))


# --------------------------------------------------------------------------- comparing


def results_difference(
    expected: Results,
    actual: Results,
    *,
    order_by: Sequence[frozenset[str]] = (),
    lax_cardinality: bool = False,
) -> str | None:
    """None when ``actual`` equals ``expected`` under the W3C rules, else a description of the difference.

    ``order_by`` holds, per top-level ORDER BY condition, the names of the variables it mentions
    (empty when the query has no ORDER BY, and then the order of solutions is free).
    """
    if type(expected) is not type(actual):
        return f"expected a {type(expected).__name__} result, got a {type(actual).__name__} result"
    if isinstance(expected, Boolean):
        return None if expected == actual else f"expected {expected.value}, got {actual.value}"
    if isinstance(expected, Graph):
        return _graph_difference(expected, actual)
    return _solutions_difference(expected, actual, order_by, lax_cardinality)


def _graph_difference(expected: Graph, actual: Graph) -> str | None:
    if find_blank_node_bijection(list(expected.triples), list(actual.triples)) is not None:
        return None
    return "the graphs are not isomorphic\n" + _rows_report(list(expected.triples), list(actual.triples), _triple)


def _solutions_difference(
    expected: Solutions, actual: Solutions, order_by: Sequence[frozenset[str]], lax_cardinality: bool
) -> str | None:
    if set(expected.variables) != set(actual.variables):
        return f"expected variables {sorted(expected.variables)}, got {sorted(actual.variables)}"
    variables = expected.variables
    expected_rows = list(expected.rows)
    actual_rows = list(actual.columns(variables))
    if lax_cardinality:
        # REDUCED may drop any number of duplicates: only the set of solutions is fixed.
        expected_rows = list(dict.fromkeys(expected_rows))
        actual_rows = list(dict.fromkeys(actual_rows))

    def describe(row: Row) -> str:
        return _solution(variables, row)

    if find_blank_node_bijection(expected_rows, actual_rows) is None:
        header = f"expected {len(expected_rows)} solutions, got {len(actual_rows)}"
        return header + "\n" + _rows_report(expected_rows, actual_rows, describe)
    order_key = _order_key(order_by, variables)
    if order_key is None:
        return None
    keys = Solutions(variables, tuple(expected_rows)).columns(order_key.columns)
    blocks = _order_blocks(keys)
    tagged_expected = [(block, *row) for block, row in zip(blocks, expected_rows, strict=True)]
    tagged_actual = [(block, *row) for block, row in zip(blocks, actual_rows, strict=True)]
    if find_blank_node_bijection(tagged_expected, tagged_actual) is not None:
        return None
    return (
        f"the same solutions, but not in the order of ORDER BY: {order_key.describe()}\n"
        + "expected:\n"
        + "\n".join("  " + describe(row) for row in expected_rows)
        + "\nactual:\n"
        + "\n".join("  " + describe(row) for row in actual_rows)
    )


@dataclass(frozen=True)
class _OrderKey:
    """The result columns whose sequence ORDER BY fixes; ``hidden`` when some key is not projected."""

    columns: tuple[str, ...]
    hidden: bool

    def describe(self) -> str:
        if self.hidden:
            return "a key the results do not show, so the order is compared solution by solution"
        return "on " + ", ".join("?" + v for v in self.columns)


def _order_key(order_by: Sequence[frozenset[str]], variables: Sequence[str]) -> _OrderKey | None:
    """What of the ORDER BY conditions the results let us check; None when nothing.

    Conditions whose variables are all projected are *visible*: their columns are the key, most
    significant first. The first condition mentioning no variable ends the key: a constant orders
    nothing, and ``RAND()`` makes the rest of the order arbitrary. A condition mentioning a variable
    that is not projected is *hidden* (``SELECT ?s … ORDER BY ?o``): its ties cannot be seen, so from
    there on the expected sequence is taken as it is, every solution in place (the key becomes the
    whole solution). That is stricter than SPARQL when solutions tie on the hidden key yet differ in
    what is projected, since the expected file then shows one of several valid orders; the W3C tests
    that order by hidden keys (sort-not-projected, dawg-sort-numbers, -builtin, -function) have no
    such ties.
    """
    columns: list[str] = []
    for mentioned in order_by:
        if not mentioned:
            break
        if not mentioned <= set(variables):
            return _OrderKey(tuple(variables), hidden=True)
        columns.extend(sorted(v for v in mentioned if v not in columns))
    return _OrderKey(tuple(columns), hidden=False) if columns else None


def _order_blocks(keys: Sequence[Row]) -> list[int]:
    """A block number for each position: consecutive expected solutions with equal keys share one.

    ORDER BY fixes the sequence of the key values but not the order of solutions that tie on them,
    so the actual solutions must fill the same blocks, each as a bag: the comparison tags every
    solution with the block of its position and compares tagged bags. Ties are detected on the key
    *columns*: solutions with equal columns certainly tie. Two solutions can also tie with different
    columns (``ORDER BY STR(?x)`` on ``"a"`` and ``<a>``; numerically equal ``1`` and ``1.0``); they
    land in different blocks, which is stricter than SPARQL, and would show as an order difference.
    """
    blocks = []
    for position, key in enumerate(keys):
        if position == 0:
            blocks.append(0)
        else:
            blocks.append(blocks[-1] + (key != keys[position - 1]))
    return blocks


def find_blank_node_bijection(expected: Sequence[Row], actual: Sequence[Row]) -> dict[Term, Term] | None:
    """A bijection from the blank nodes of ``actual`` to those of ``expected`` mapping the bag of
    ``actual`` rows onto the bag of ``expected`` rows, or None when there is none.

    Rows are tuples of terms (or any other hashable, compared as is). A blank node is the same node
    wherever its label occurs in one side's rows. Quoted triples are looked through.

    Blank nodes are first coloured by iterated refinement (a node's colour summarises the rows it
    occurs in and the colours of its neighbours), so only equally coloured nodes may correspond;
    then rows with blank nodes are matched by backtracking, most constrained row first.
    """
    expected_rows = [_flatten(row) for row in expected]
    actual_rows = [_flatten(row) for row in actual]
    if len(expected_rows) != len(actual_rows):
        return None
    if Counter(r for r in expected_rows if not _has_blank(r)) != Counter(r for r in actual_rows if not _has_blank(r)):
        return None
    expected_rows = [r for r in expected_rows if _has_blank(r)]
    actual_rows = [r for r in actual_rows if _has_blank(r)]
    colour = _refine_colours(expected_rows, actual_rows)
    if colour is None:
        return None

    def shape(side: int, row: Row) -> tuple:
        return tuple(("b", colour[side, item]) if isinstance(item, ox.BlankNode) else ("t", item) for item in row)

    if Counter(shape(0, r) for r in expected_rows) != Counter(shape(1, r) for r in actual_rows):
        return None
    # Remaining actual rows, grouped by shape; a Counter per shape keeps duplicate rows together,
    # so a bag of identical rows is tried once, not once per copy.
    available: dict[tuple, Counter] = defaultdict(Counter)
    for row in actual_rows:
        available[shape(1, row)][row] += 1
    to_match = [(shape(0, row), row) for row in expected_rows]
    actual_to_expected: dict[Term, Term] = {}
    expected_to_actual: dict[Term, Term] = {}

    def pairs(expected_row: Row, actual_row: Row) -> list[tuple[Term, Term]] | None:
        """The new (actual, expected) blank-node pairs matching these rows needs, None if inconsistent."""
        new: dict[Term, Term] = {}
        for e, a in zip(expected_row, actual_row, strict=True):
            if not isinstance(e, ox.BlankNode):
                continue
            mapped = actual_to_expected.get(a, new.get(a))
            if mapped is not None:
                if mapped != e:
                    return None
                continue
            if e in expected_to_actual or e in new.values():
                return None
            new[a] = e
        return list(new.items())

    def candidates(row_shape: tuple, expected_row: Row) -> list[tuple[Row, list]]:
        found = []
        for actual_row, count in available[row_shape].items():
            if count:
                needed = pairs(expected_row, actual_row)
                if needed is not None:
                    found.append((actual_row, needed))
        return found

    def search() -> bool:
        if not to_match:
            return True
        best = None
        for position, (row_shape, expected_row) in enumerate(to_match):
            options = candidates(row_shape, expected_row)
            if best is None or len(options) < len(best[1]):
                best = (position, options)
                if not options:
                    return False
        position, options = best
        row_shape, expected_row = to_match.pop(position)
        for actual_row, needed in options:
            available[row_shape][actual_row] -= 1
            for a, e in needed:
                actual_to_expected[a] = e
                expected_to_actual[e] = a
            if search():
                return True
            for a, e in needed:
                del actual_to_expected[a]
                del expected_to_actual[e]
            available[row_shape][actual_row] += 1
        to_match.insert(position, (row_shape, expected_row))
        return False

    return dict(actual_to_expected) if search() else None


def _flatten(row: Row) -> Row:
    """Quoted triples spelled out with markers, so their blank nodes take part in the bijection."""
    if not any(isinstance(item, ox.Triple) for item in row):
        return tuple(row)
    flat: list = []
    for item in row:
        if isinstance(item, ox.Triple):
            flat.append("<<")
            flat.extend(_flatten((item.subject, item.predicate, item.object)))
            flat.append(">>")
        else:
            flat.append(item)
    return tuple(flat)


def _has_blank(row: Row) -> bool:
    return any(isinstance(item, ox.BlankNode) for item in row)


def _refine_colours(expected: Sequence[Row], actual: Sequence[Row]) -> dict[tuple[int, Term], int] | None:
    """Colours of the blank nodes of both sides (keyed by (side, node)), or None when the colour
    counts already differ between the sides (then no bijection exists).

    Each round a node's new colour hashes its old colour with the multiset of (its position, the row
    with blank nodes replaced by their colours) over the rows it occurs in. Isomorphic nodes always
    get equal colours, so restricting the search to equal colours loses no bijection.
    """
    sides = (expected, actual)
    occurrences: dict[tuple[int, Term], list[tuple[int, Row]]] = defaultdict(list)
    for side, rows in enumerate(sides):
        for row in rows:
            for position, item in enumerate(row):
                if isinstance(item, ox.BlankNode):
                    occurrences[side, item].append((position, row))
    colour = dict.fromkeys(occurrences, 0)
    distinct = 1 if occurrences else 0
    # Refinement only splits colour classes, so it is stable after at most one round per node.
    for _ in range(len(occurrences) + 1):
        refined = {}
        for (side, node), seen in occurrences.items():
            signature = Counter(
                hash(
                    (
                        position,
                        tuple(
                            ("b", colour[side, item]) if isinstance(item, ox.BlankNode) else ("t", item)
                            for item in row
                        ),
                    )
                )
                for position, row in seen
            )
            refined[side, node] = hash((colour[side, node], frozenset(signature.items())))
        per_side = [Counter(c for (s, _), c in refined.items() if s == side) for side in (0, 1)]
        if per_side[0] != per_side[1]:
            return None
        if len(set(refined.values())) == distinct:
            return refined
        colour = refined
        distinct = len(set(refined.values()))
    return colour


# --------------------------------------------------------------------------- messages


class _AnyBlank:
    """Stands for every blank node in difference reports."""

    def __str__(self) -> str:
        return "_:*"


_ANY_BLANK = _AnyBlank()


def _term(term: Term | None) -> str:
    return "UNDEF" if term is None else str(term)


def _solution(variables: Sequence[str], row: Row) -> str:
    return " ".join(f"?{v}={_term(t)}" for v, t in zip(variables, row, strict=True) if t is not None) or "{}"


def _triple(row: Row) -> str:
    return " ".join(_term(t) for t in row) + " ."


def _rows_report(expected: Sequence[Row], actual: Sequence[Row], describe) -> str:
    """The rows only one side has. Blank nodes are all written ``_:*`` here, since their labels are
    arbitrary: rows differing only in labels cancel out, and what is left is a real difference (or,
    when nothing is left, the labels cannot be renamed consistently)."""

    def unlabelled(row: Row) -> Row:
        return tuple(_ANY_BLANK if isinstance(item, ox.BlankNode) else item for item in row)

    missing = Counter(map(unlabelled, expected)) - Counter(map(unlabelled, actual))
    unexpected = Counter(map(unlabelled, actual)) - Counter(map(unlabelled, expected))
    lines = []
    for title, rows in (("missing", missing), ("unexpected", unexpected)):
        listed = list(rows.elements())
        if listed:
            lines.append(f"{title} ({len(listed)}):")
            lines.extend("  " + describe(row) for row in listed[:25])
            if len(listed) > 25:
                lines.append(f"  … and {len(listed) - 25} more")
    return "\n".join(lines) if lines else "the same rows up to blank-node labels, but no consistent renaming of them"
