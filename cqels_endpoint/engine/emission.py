"""What a continuous query emits: ``Emission`` and the SPARQL 1.1 JSON form of terms.

An evaluator hands the rows of one evaluation over as ``EmittedRows``: decoded mappings for
callbacks (``RowDecoder``), or SPARQL JSON written straight from term ids (``IdRows`` with a ``BindingsWriter``) for
the HTTP subscribers, so a query watched only over SSE/NDJSON never builds a term per row.
``instantiate`` applies a CONSTRUCT template to the rows of one emission.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import pyoxigraph as ox

from cqels_endpoint.errors import ArgumentError
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.query.kinds import R2S
from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python
from cqels_endpoint.runtime.term_kinds import TermKind, kind_of
from cqels_endpoint.runtime.term_text import BLANK, VARIABLE, Term, ntriples_term, template_part, term_json
from cqels_endpoint.terms import BlankNode, Var

Row = dict[str, Term]

@dataclass(frozen=True)
class Emission:
    """One output of a continuous query at time ``time`` (ms).

    SELECT: ``rows`` (solution mappings ``{var: pyoxigraph term}``), ``variables`` the projection;
    ``bindings`` the same rows as the JSON text of a SPARQL 1.1 JSON ``bindings`` array, written
    when a subscriber asked for JSON (``ContinuousQuery.subscribe(…, json_only=True)``). When every
    subscriber did, ``rows`` is None and the rows are never decoded.
    CONSTRUCT: ``triples`` (the template instantiated on the rows of this R2S), or, when every
    subscriber asked for JSON, ``ntriples`` (the same triples as N-Triples text, written from ids)
    and ``triples`` None.
    ASK: ``boolean``, the answer (RSTREAM: at every evaluation; ISTREAM: ``True`` when it turns
    true; DSTREAM: ``False`` when it turns false).
    A query with a directional window (engine/directional.py) evaluates at anchors: ``anchor`` is
    the anchor (then also ``time``) and ``final`` says whether this is the anchor's exact result
    at its window's close (True) or an early result over the events arrived so far (False); both
    are None for every other query.
    """

    query: str
    time: int
    r2s: R2S
    variables: tuple[str, ...] = ()
    rows: list[Row] | None = None
    triples: list[ox.Triple] | None = None
    boolean: bool | None = None
    bindings: str | None = None
    ntriples: str | None = None
    anchor: int | None = None
    final: bool | None = None

    @property
    def constructed(self) -> bool:
        """A CONSTRUCT emission (triples, not rows)."""
        return self.triples is not None or self.ntriples is not None

    def to_sparql_json(self) -> dict:
        """A SPARQL 1.1 JSON result: ``head``/``results`` of these rows, or ``head``/``boolean`` (ASK)."""
        if self.boolean is not None:
            return {"head": {}, "boolean": self.boolean}
        if self.constructed:
            msg = "a CONSTRUCT emission has triples, not rows: use to_ntriples()"
            raise TypeError(msg)
        if self.rows is None:
            bindings = json.loads(self.bindings)
        else:
            bindings = [{var: term_json(term) for var, term in row.items()} for row in self.rows]
        return {"head": {"vars": list(self.variables)}, "results": {"bindings": bindings}}

    def to_ntriples(self) -> str:
        """The triples as N-Triples text (CONSTRUCT only)."""
        if not self.constructed:
            msg = "a SELECT or ASK emission has no triples: use to_sparql_json()"
            raise TypeError(msg)
        if self.ntriples is not None:
            return self.ntriples
        return "".join(f"{triple} .\n" for triple in self.triples)

    def graph(self) -> list[ox.Triple]:
        """The triples as pyoxigraph terms (CONSTRUCT only), read from ``ntriples`` if need be."""
        if self.triples is not None:
            return self.triples
        return [quad.triple for quad in ox.parse(self.to_ntriples(), format=ox.RdfFormat.N_TRIPLES)]

    def to_json(self) -> dict:
        """The JSON object of one Server-Sent Event / NDJSON line (docs/ARCHITECTURE.md, "Emissions (R2S)")."""
        head = self._head()
        if not self.constructed:
            return head | self.to_sparql_json()
        return head | {"triples": self.to_ntriples()}

    def _head(self) -> dict:
        head = {"query": self.query, "time": self.time, "r2s": self.r2s}
        if self.anchor is not None:
            head |= {"anchor": self.anchor, "final": self.final}
        return head

    def json_text(self) -> str:
        """``to_json()`` as one line of JSON text (``json.dumps(…, ensure_ascii=False)``), the
        bindings of a SELECT spliced in from ``bindings`` when they were written from ids."""
        if self.bindings is None:
            return json.dumps(self.to_json(), ensure_ascii=False)
        head = self._head() | {"head": {"vars": list(self.variables)}}
        return f'{json.dumps(head, ensure_ascii=False)[:-1]}, "results": {{"bindings": {self.bindings}}}}}'


_NEW = object.__new__
_DEFAULTS = {field.name: field.default for field in fields(Emission)}


def new_emission(query: str, time: int, r2s: R2S, **values: object) -> Emission:
    """``Emission(query, time, r2s, **values)`` without the frozen dataclass's ``__init__``, which
    sets each field through ``object.__setattr__`` (a query of many emitting per event makes one
    each): the fields are written into the new instance's ``__dict__`` at once."""
    made = _NEW(Emission)
    made.__dict__.update(_DEFAULTS, query=query, time=time, r2s=r2s, **values)
    return made

def bindings_json(rows: Sequence[Row]) -> str:
    """Decoded rows as the JSON text of a SPARQL 1.1 JSON ``bindings`` array."""
    return json.dumps([{var: term_json(term) for var, term in row.items()} for row in rows], ensure_ascii=False)


class EmittedRows:
    """The rows one evaluation emits (Γ's changes of the emitted sign, or Γ for RSTREAM), here
    already decoded. Use it as a context manager: the rows are valid inside the ``with`` only."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __enter__(self) -> EmittedRows:
        return self

    def __exit__(self, *_exc) -> None:
        self.release()

    def mappings(self) -> list[Row]:
        """The rows as solution mappings."""
        return self._rows

    def bindings_json(self) -> str:
        """The rows as the JSON text of a SPARQL 1.1 JSON ``bindings`` array."""
        return bindings_json(self._rows)

    def constructed(self, template) -> str:
        """The CONSTRUCT ``template`` on the rows, as N-Triples text."""
        return "".join(f"{triple} .\n" for triple in instantiate(template, self._rows))

    def release(self) -> None:
        """The rows are no longer needed (decoded rows hold nothing)."""


class IdRows(EmittedRows):
    """Rows of term ids aligned with an evaluator's schema, held by the evaluator until
    ``release()``: decoded only if asked (``decode_all``), written as JSON by ``writer``."""

    __slots__ = ("_decode_all", "_ids", "_release", "_template_writer", "_writer")

    def __init__(self, ids: list[tuple], decode_all: Callable[[list[tuple]], list[Row]], writer: BindingsWriterPython,
                 release: Callable[[], None], template_writer: TemplateWriterPython | None = None) -> None:
        super().__init__([])
        self._ids = ids
        self._decode_all = decode_all
        self._writer = writer
        self._template_writer = template_writer
        self._release = release

    def __len__(self) -> int:
        return len(self._ids)

    def mappings(self) -> list[Row]:
        return self._decode_all(self._ids)

    def bindings_json(self) -> str:
        return self._writer.write(self._ids)

    def constructed(self, template) -> str:
        if self._template_writer is None:
            return super().constructed(template)
        return self._template_writer.write(self._ids)

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


# Texts an _IdTexts holds before it first prunes: the hot ids of a query (its constants, the values
# it groups by) fit in it many times over.
PRUNE_FLOOR = 1 << 12


class _IdTexts:
    """A text per term id, written once from its term and kept by id: dictionary ids are never
    reused (``runtime.encoding``) and inline ids are their values, so a kept text never goes stale.

    Bounded by the ids that live: the text of an id whose entry the dictionary released is never
    asked for again (ISTREAM writes each new subject once), so when it holds ``_limit`` texts it
    keeps only those of live dictionary ids (inline ones go too: one per distinct value would pile
    up as well), then allows twice as many as it kept (at least ``PRUNE_FLOOR``), which makes the
    pruning cost O(1) per new text. Should the live ones fill over half of ``capacity``, it clears
    (the hot ids come back at once). A fixed capacity alone let a query's texts grow for as long as
    it took to see ``capacity`` distinct ids: 44 minutes of steady load for one a benchmark ran."""

    __slots__ = ("_capacity", "_dictionary", "_limit", "_texts", "_write")

    def __init__(self, dictionary, write: Callable[[Term | ox.Triple], str], capacity: int) -> None:
        self._dictionary = dictionary
        self._write = write
        self._texts: dict[int, str] = {}
        self._capacity = capacity
        self._limit = min(capacity, PRUNE_FLOOR)

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, term_id: int) -> str:
        text = self._texts.get(term_id)
        if text is None:
            text = self._write(self._dictionary.decode(term_id))
            if len(self._texts) >= self._limit:
                self._prune()
            self._texts[term_id] = text
        return text

    def _prune(self) -> None:
        refcount = self._dictionary.refcount
        self._texts = {term_id: text for term_id, text in self._texts.items() if term_id >= 0 and refcount(term_id)}
        if 2 * len(self._texts) > self._capacity:
            self._texts.clear()
        self._limit = min(self._capacity, max(PRUNE_FLOOR, 2 * len(self._texts)))


class BindingsWriterPython:
    """Writes rows of term ids (aligned with ``schema``, None for unbound) as SPARQL 1.1 JSON
    bindings, the text ``bindings_json`` gives for the decoded rows: each id's JSON is written once
    (``_IdTexts``), and a row is the concatenation of its ids' texts. The reference version of
    ``BindingsWriter`` (compiled in ``runtime/_r2s.pyx`` unless ``CQELS_PURE_PYTHON=1``)."""

    __slots__ = ("_keys", "_texts")

    def __init__(self, dictionary, schema: Sequence[str], capacity: int = 1 << 16) -> None:
        self._keys = tuple(json.dumps(name, ensure_ascii=False) + ": " for name in schema)
        self._texts = _IdTexts(dictionary, lambda term: json.dumps(term_json(term), ensure_ascii=False), capacity)

    def write(self, rows: Sequence[tuple]) -> str:
        text, keys = self._texts.text, self._keys
        written = []
        for row in rows:
            fields = [key + text(term_id) for key, term_id in zip(keys, row) if term_id is not None]
            written.append("{" + ", ".join(fields) + "}")
        return "[" + ", ".join(written) + "]"


class TemplateWriterPython:
    """Writes a CONSTRUCT template instantiated on rows of ids (aligned with ``schema``) as
    N-Triples: the triples ``instantiate`` makes of the decoded rows, in the same order, with the
    same ill-formed triples skipped (kinds read from the ids' type bits) and duplicates dropped;
    blank nodes are fresh per row in both, so only their labels differ. The reference version of
    ``TemplateWriter`` (compiled in ``runtime/_r2s.pyx`` unless ``CQELS_PURE_PYTHON=1``)."""

    __slots__ = ("_template", "_texts")

    def __init__(self, dictionary, schema: Sequence[str], template, capacity: int = 1 << 16) -> None:
        positions = {name: i for i, name in enumerate(schema)}
        self._texts = _IdTexts(dictionary, ntriples_term, capacity)
        self._template = [
            tuple(template_part(term, positions) for term in (pattern.subject, pattern.predicate, pattern.object))
            for pattern in template
        ]

    def write(self, rows: Sequence[tuple]) -> str:
        text = self._texts.text
        lines: dict[str, None] = {}
        for row in rows:
            fresh: dict[str, str] = {}
            for parts in self._template:
                written = []
                for position, (what, value, kind) in enumerate(parts):
                    if what == VARIABLE:
                        term_id = row[value]
                        if term_id is None:
                            break
                        kind = kind_of(term_id)
                        value = text(term_id)
                    elif what == BLANK:
                        label = fresh.get(value)
                        if label is None:
                            label = fresh[value] = str(ox.BlankNode())
                        value = label
                    elif value is None:  # a constant that is no term (an ill-formed literal, say)
                        break
                    # By identity: an inline id's kind is an InlineType, whose values overlap TermKind's.
                    if position == 0 and not (kind is TermKind.IRI or kind is TermKind.BLANK_NODE):
                        break
                    if position == 1 and kind is not TermKind.IRI:
                        break
                    written.append(value)
                else:
                    lines.setdefault(" ".join(written) + " .\n")
        return "".join(lines)


class RowDecoderPython:
    """Rows of term ids (aligned with ``schema``, None for unbound) as solution mappings, for the
    subscribers that read terms. The reference version of ``RowDecoder`` (compiled in
    ``runtime/_r2s.pyx`` unless ``CQELS_PURE_PYTHON=1``)."""

    __slots__ = ("_decode", "_kept", "_schema")

    def __init__(self, dictionary, schema: Sequence[str]) -> None:
        self._decode = dictionary.decode
        self._schema = tuple(schema)
        self._kept: dict[tuple, Row] = {}  # the last snapshot's rows → their mappings

    def decode(self, row: tuple) -> Row:
        """A row as a solution mapping (its unbound columns left out)."""
        decode = self._decode
        return {name: decode(value) for name, value in zip(self._schema, row) if value is not None}

    def decode_all(self, rows: Sequence[tuple]) -> list[Row]:
        """Every row decoded."""
        return [self.decode(row) for row in rows]

    def snapshot(self, rows: Sequence[tuple]) -> list[Row]:
        """Γ at an evaluation (RSTREAM), where a row usually stays for many evaluations: each
        distinct row is decoded once while it stays, and the mapping is shared by the snapshots
        that list it (callers treat mappings as read-only)."""
        previous, current = self._kept, {}
        mappings = []
        for row in rows:
            mapping = previous.get(row)
            if mapping is None:
                mapping = current.get(row)
                if mapping is None:
                    mapping = self.decode(row)
            current[row] = mapping
            mappings.append(mapping)
        self._kept = current
        return mappings


if use_pure_python():
    BindingsWriter, TemplateWriter, RowDecoder = BindingsWriterPython, TemplateWriterPython, RowDecoderPython
else:
    with compiled_imports("R2S writers"):
        from cqels_endpoint.runtime._r2s import BindingsWriter, RowDecoder, TemplateWriter  # noqa: F401  (selected twins)


def term_from_json(param: str, value: object) -> ox.NamedNode | ox.Literal:
    """A SPARQL 1.1 JSON result term (``uri`` or ``literal``); ``ValueError`` naming ``param`` otherwise."""
    if not isinstance(value, dict) or not isinstance(value.get("value"), str):
        msg = f'the binding of ?{param} must be an object like {{"type": "uri", "value": "http://…"}}, not {value!r}'
        raise ArgumentError(msg)
    kind, text = value.get("type"), value["value"]
    if kind == "uri":
        try:
            return ox.NamedNode(text)
        except ValueError as error:
            raise ArgumentError(f"?{param}: {text!r} is not an IRI ({error})") from None
    if kind in ("literal", "typed-literal"):
        language, datatype = value.get("xml:lang"), value.get("datatype")
        try:
            if language is not None:
                return ox.Literal(text, language=language)
            return ox.Literal(text, datatype=None if datatype is None else ox.NamedNode(datatype))
        except (ValueError, TypeError) as error:
            raise ArgumentError(f"?{param}: bad literal {value!r} ({error})") from None
    if kind == "bnode":
        raise ArgumentError(f"?{param}: a blank node cannot be pre-bound (it would be a new node in the query); use an IRI")
    raise ArgumentError(f'?{param}: unknown term type {kind!r}; use "uri" or "literal"')


def instantiate(template, rows: list[Row]) -> list[ox.Triple]:
    """The CONSTRUCT template on each row: fresh blank nodes per row, ill-formed triples skipped
    (an unbound variable, a literal subject, a non-IRI predicate), duplicates dropped."""
    triples: dict[ox.Triple, None] = {}
    for row in rows:
        fresh: dict[str, ox.BlankNode] = {}
        for pattern in template:
            terms = [_template_term(x, row, fresh) for x in (pattern.subject, pattern.predicate, pattern.object)]
            subject, predicate, obj = terms
            if obj is None or not isinstance(subject, (ox.NamedNode, ox.BlankNode)) or not isinstance(predicate, ox.NamedNode):
                continue
            triples.setdefault(ox.Triple(subject, predicate, obj))
    return list(triples)


def _template_term(term, row: Row, fresh: dict[str, ox.BlankNode]):
    if isinstance(term, Var):
        return row.get(term.name)
    if isinstance(term, BlankNode):
        if term.label not in fresh:
            fresh[term.label] = ox.BlankNode()
        return fresh[term.label]
    try:
        return constant_term(term)
    except (TypeError, ValueError):
        return None


