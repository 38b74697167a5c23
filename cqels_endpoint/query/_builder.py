"""The AST handlers of the grammar's rules: parse → AST (``cqels_endpoint.query.ast``), spans included.

One handler per grammar rule (or alias), named after it, called by ``_reductions`` as the LALR
parser reduces the rule, with the rule's (start, end) offsets and its kept children. Rules are
reduced left to right, so a PREFIX or BASE declaration is in force for everything written after
it. What the handlers do beyond copying:

- prefixed names are expanded and relative IRIs resolved against the base (kept relative without);
- string escapes are replaced; numbers get xsd:integer / xsd:decimal / xsd:double; ``a`` is rdf:type;
- triple sugar (``;``, ``,``, ``[ … ]``, collections) becomes plain triple patterns over generated
  blank nodes, labelled ``b0``, ``b1``, … in the order the parser completes them, skipping labels
  the text itself uses, so the same text always gives the same labels;
- durations become milliseconds in window configurations, with the CQELS-specific checks (a unit,
  SLIDE not longer than RANGE, exactly one window per STREAM, a triple pattern in every STREAM
  block) and the rejection of stream constructs where the caller does not allow them.
"""

from __future__ import annotations

import re
from dataclasses import replace

from lark import Token

from cqels_endpoint.config import DEFAULT_STREAM_BASE
from cqels_endpoint.errors import QuerySyntaxError, Span
from cqels_endpoint.query import ast
from cqels_endpoint.query._durations import parse_duration
from cqels_endpoint.query._iri import resolve_iri
from cqels_endpoint.query._lexical import Source, unescape_local_name, unescape_string
from cqels_endpoint.query.visit import walk
from cqels_endpoint.query.windows import (
    AllWindow,
    DirectionalWindow,
    NowWindow,
    PolicyWindow,
    RangeWindow,
    TriplesWindow,
    WindowConfig,
)
from cqels_endpoint.terms import (
    IRI,
    RDF_FIRST,
    RDF_NIL,
    RDF_REST,
    RDF_TYPE,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    Literal,
    Var,
)

_GENERATED_LABEL = re.compile(r"_:b([0-9]+)")
_KEYWORD = re.compile(r"[A-Za-z]+")
_CONTINUOUS_ONLY = "{} is only allowed in continuous queries; register the query under /queries/{{name}}"


class _TriplesNode:
    """A ``[ … ]`` or ``( … )`` in subject or object position: its node and the triples it stands for."""

    __slots__ = ("term", "triples")

    def __init__(self, term: IRI | BlankNode, triples: list[ast.TriplePattern]):
        self.term = term
        self.triples = triples


def _cover(first: Span | None, last: Span | None) -> Span | None:
    if first is None:
        return last
    return first.cover(last)


def _flatten(lists: list) -> list:
    return [item for items in lists if items is not None for item in items]


class AstBuilder:
    """Builds one query or update; not reusable (it keeps the prologue and blank-node state)."""

    def __init__(
        self,
        source: Source,
        base_iri: str | None,
        *,
        allow_streams: bool = True,
        stream_base: str = DEFAULT_STREAM_BASE,
    ):
        self.source = source
        self.base = base_iri
        self.stream_base = stream_base
        # FROM STREAM windows by stream, for the window-less CQELS-QL 2.0 ``STREAM Name { … }``
        # (the FROM clauses are reduced before the WHERE clause that reads them).
        self._declared_windows: dict[IRI, WindowConfig] = {}
        self.declared_base: str | None = None
        self.prefixes: dict[str, str] = {}
        self.allow_streams = allow_streams
        self._written_generated = {int(n) for n in _GENERATED_LABEL.findall(source.text)}
        self._next_label = 0

    # ------------------------------------------------------------------ spans, errors, terms

    def _span(self, at: tuple[int | None, int | None]) -> Span | None:
        """The span of a rule from its (start, end) offsets; None for a rule that matched nothing."""
        start, end = at
        return None if start is None else self.source.span(start, end)

    def _token_span(self, token: Token) -> Span:
        return self.source.span(token.start_pos, token.end_pos)

    def _error(self, message: str, start: int, end: int) -> QuerySyntaxError:
        return self.source.error(message, start, end)

    def _error_at(self, message: str, span: Span | None) -> QuerySyntaxError:
        if span is None:
            return QuerySyntaxError.at(message, self.source.original, 0, 0)
        return QuerySyntaxError(message, self.source.original, span)

    def _fresh_blank_node(self, span: Span | None) -> BlankNode:
        while self._next_label in self._written_generated:
            self._next_label += 1
        label = f"b{self._next_label}"
        self._next_label += 1
        return BlankNode(label, generated=True, span=span)

    def _verb(self, value):
        """A verb or path element: the token ``a`` becomes rdf:type."""
        if isinstance(value, Token):
            return IRI(RDF_TYPE, span=self._token_span(value))
        return value

    def _continuous_only(self, construct: str, start: int, end: int) -> None:
        if not self.allow_streams:
            raise self._error(_CONTINUOUS_ONLY.format(construct), start, end)

    # ------------------------------------------------------------------ prologue

    def prologue(self, at, children):
        return ast.Prologue(self.declared_base, tuple(self.prefixes.items()), span=self._span(at))

    def base_decl(self, at, children):
        self.base = self.declared_base = resolve_iri(self.base, children[0][1:-1])

    def prefix_decl(self, at, children):
        name, iri = children
        self.prefixes[name[:-1]] = resolve_iri(self.base, iri[1:-1])

    # ------------------------------------------------------------------ queries

    def query_unit(self, at, children):
        return children[0]

    def query(self, at, children):
        prologue, register, later_prologue, form, values = children
        if later_prologue is not None:
            prologue = replace(later_prologue, span=_cover(prologue.span, later_prologue.span))
        if values is not None:
            form = replace(form, values=values)
        source = self.source.original
        return ast.Query(form, prologue, register, text=source, span=Span.at(source, 0, len(source)))

    def register(self, at, children):
        kind, name = children
        self._continuous_only("REGISTER", at[0], at[0] + len("REGISTER"))
        if isinstance(name, Token):
            name = str(name)
        return ast.Register(kind, name, span=self._span(at))

    def register_kind(self, at, children):
        return children[0].upper()

    def select_query(self, at, children):
        clause, *datasets, where, modifiers = children
        distinct, reduced, projection = clause
        return ast.SelectQuery(
            projection, where, distinct, reduced, tuple(datasets), modifiers, span=self._span(at)
        )

    def sub_select(self, at, children):
        (distinct, reduced, projection), where, modifiers, values = children
        span = self._span(at)
        select = ast.SelectQuery(projection, where, distinct, reduced, (), modifiers, values, span=span)
        return ast.SubSelect(select, span=span)

    def select_clause(self, at, children):
        modifier, *items = children
        keyword = modifier.upper() if modifier is not None else None
        return keyword == "DISTINCT", keyword == "REDUCED", tuple(items)

    def projection_expression(self, at, children):
        expr, var = children
        return ast.ProjectionExpression(expr, var, span=self._span(at))

    def construct_query(self, at, children):
        template, *datasets, where, modifiers = children
        return ast.ConstructQuery(tuple(template), where, tuple(datasets), modifiers, span=self._span(at))

    def construct_where(self, at, children):
        *datasets, triples, modifiers = children
        template = tuple(triples or ())
        elements = (ast.TriplesBlock(template, span=_cover(template[0].span, template[-1].span)),) if template else ()
        where = ast.GroupGraphPattern(elements, span=elements[0].span if elements else None)
        return ast.ConstructQuery(
            template, where, tuple(datasets), modifiers, short_form=True, span=self._span(at)
        )

    def describe_query(self, at, children):
        targets = tuple(c for c in children if isinstance(c, (Var, IRI)))
        datasets = tuple(c for c in children if isinstance(c, (ast.DatasetClause, ast.StreamDataset, ast.NamedWindow)))
        where, modifiers = children[-2], children[-1]
        return ast.DescribeQuery(targets, where, datasets, modifiers, span=self._span(at))

    def ask_query(self, at, children):
        *datasets, where, modifiers = children
        return ast.AskQuery(where, tuple(datasets), modifiers, span=self._span(at))

    def dataset_clause(self, at, children):
        return replace(children[0], span=self._span(at))

    def default_graph_clause(self, at, children):
        return ast.DatasetClause(children[0], span=self._span(at))

    def named_graph_clause(self, at, children):
        return ast.DatasetClause(children[0], named=True, span=self._span(at))

    def solution_modifier(self, at, children):
        group_by, having, order_by, limits = children
        limit, offset = limits if limits is not None else (None, None)
        return ast.Modifiers(
            group_by or (), having or (), order_by or (), limit, offset, span=self._span(at)
        )

    def group_clause(self, at, children):
        return tuple(children)

    def group_condition(self, at, children):
        span = self._span(at)
        if len(children) == 2:
            return ast.GroupCondition(children[0], children[1], span=span)
        return ast.GroupCondition(children[0], span=span)

    def having_clause(self, at, children):
        return tuple(children)

    def order_clause(self, at, children):
        return tuple(children)

    def order_condition(self, at, children):
        span = self._span(at)
        if len(children) == 2:
            return ast.OrderCondition(children[1], descending=children[0].upper() == "DESC", span=span)
        return ast.OrderCondition(children[0], span=span)

    def limit_offset_clauses(self, at, children):
        clauses = dict(c for c in children if c is not None)
        return clauses.get("limit"), clauses.get("offset")

    def limit_clause(self, at, children):
        return "limit", children[0]

    def offset_clause(self, at, children):
        return "offset", children[0]

    def integer(self, at, children):
        # LIMIT/OFFSET: past 2^63 no result has that many rows, so the value is clamped there, which
        # changes no answer and spares converting thousands of digits (Python refuses to).
        digits = children[0].value.lstrip("0") or "0"
        return _HUGE_COUNT if len(digits) > len(str(_HUGE_COUNT)) else min(int(digits), _HUGE_COUNT)

    def values_clause(self, at, children):
        if not children:
            return None
        variables, rows = children[0]
        return ast.InlineData(variables, rows, span=self._span(at))

    # ------------------------------------------------------------------ updates

    def update_unit(self, at, children):
        return children[0]

    def update(self, at, children):
        operations, prologues = [], []
        prologue = None
        for child in children:
            if isinstance(child, ast.Prologue):
                prologue = child
            elif child is not None:
                operations.append(child)
                prologues.append(prologue)
        source = self.source.original
        return ast.Update(
            tuple(operations), tuple(prologues), text=source, span=Span.at(source, 0, len(source))
        )

    def load(self, at, children):
        silent, source, into = children
        return ast.Load(source, into.iri if into is not None else None, silent is not None, span=self._span(at))

    def clear(self, at, children):
        return ast.Clear(children[1], children[0] is not None, span=self._span(at))

    def drop(self, at, children):
        return ast.Drop(children[1], children[0] is not None, span=self._span(at))

    def create(self, at, children):
        return ast.Create(children[1].iri, children[0] is not None, span=self._span(at))

    def _transfer(self, op, at, children):
        silent, source, destination = children
        return ast.GraphTransfer(op, source, destination, silent is not None, span=self._span(at))

    def add(self, at, children):
        return self._transfer("ADD", at, children)

    def move(self, at, children):
        return self._transfer("MOVE", at, children)

    def copy(self, at, children):
        return self._transfer("COPY", at, children)

    def insert_data(self, at, children):
        return ast.InsertData(children[0], span=self._span(at))

    def delete_data(self, at, children):
        return ast.DeleteData(children[0], span=self._span(at))

    def delete_where(self, at, children):
        return ast.DeleteWhere(children[0], span=self._span(at))

    def modify(self, at, children):
        with_graph, *clauses, where = children
        templates = dict(c for c in clauses if isinstance(c, tuple))
        using = tuple(c for c in clauses if isinstance(c, ast.DatasetClause))
        return ast.Modify(
            templates.get("delete", ()),
            templates.get("insert", ()),
            where,
            with_graph,
            using,
            span=self._span(at),
        )

    def delete_clause(self, at, children):
        return "delete", children[0]

    def insert_clause(self, at, children):
        return "insert", children[0]

    def using_clause(self, at, children):
        named, iri = children
        return ast.DatasetClause(iri, named is not None, span=self._span(at))

    def graph_or_default(self, at, children):
        (target,) = children
        if isinstance(target, Token):
            return ast.GraphTarget(keyword="DEFAULT", span=self._span(at))
        return ast.GraphTarget(target, span=self._span(at))

    def graph_ref(self, at, children):
        return ast.GraphTarget(children[0], span=self._span(at))

    def graph_ref_all(self, at, children):
        (target,) = children
        if isinstance(target, Token):
            return ast.GraphTarget(keyword=target.upper(), span=self._span(at))
        return target

    def quad_pattern(self, at, children):
        return children[0]

    def quad_data(self, at, children):
        return children[0]

    def quads(self, at, children):
        quads = []
        for part in children:
            for item in part:
                if isinstance(item, ast.TriplePattern):
                    item = ast.QuadPattern(item.subject, item.predicate, item.object, span=item.span)
                quads.append(item)
        return tuple(quads)

    def quads_not_triples(self, at, children):
        graph, triples = children
        return [
            ast.QuadPattern(t.subject, t.predicate, t.object, graph, span=t.span) for t in triples or ()
        ]

    def triples_template(self, at, children):
        return _flatten(children)

    # ------------------------------------------------------------------ graph patterns

    def group_graph_pattern(self, at, children):
        (content,) = children
        elements = (content,) if isinstance(content, ast.SubSelect) else tuple(content)
        return ast.GroupGraphPattern(elements, span=self._span(at))

    def group_graph_pattern_sub(self, at, children):
        return children

    def triples_block(self, at, children):
        return ast.TriplesBlock(tuple(_flatten(children)), span=self._span(at))

    def optional_graph_pattern(self, at, children):
        return ast.OptionalPattern(children[0], span=self._span(at))

    def minus_graph_pattern(self, at, children):
        return ast.MinusPattern(children[0], span=self._span(at))

    def graph_graph_pattern(self, at, children):
        return ast.GraphPattern(children[0], children[1], span=self._span(at))

    def service_graph_pattern(self, at, children):
        silent, name, pattern = children
        return ast.ServicePattern(name, pattern, silent is not None, span=self._span(at))

    def group_or_union_graph_pattern(self, at, children):
        if len(children) == 1:
            return children[0]
        return ast.UnionPattern(tuple(children), span=self._span(at))

    def filter(self, at, children):
        return ast.Filter(children[0], span=self._span(at))

    def bind(self, at, children):
        return ast.Bind(children[0], children[1], span=self._span(at))

    def inline_data(self, at, children):
        variables, rows = children[0]
        return ast.InlineData(variables, rows, span=self._span(at))

    def inline_data_one_var(self, at, children):
        var, *values = children
        return (var,), tuple((self._data_value(v),) for v in values)

    def inline_data_full(self, at, children):
        variables = tuple(c for c in children if isinstance(c, Var))
        rows = tuple(c for c in children if isinstance(c, tuple))
        return variables, rows

    def data_block_row(self, at, children):
        if len(children) == 1 and isinstance(children[0], Token) and children[0].startswith("("):
            return ()
        return tuple(self._data_value(v) for v in children)

    def _data_value(self, value):
        return None if isinstance(value, Token) else value  # the token is UNDEF

    # ------------------------------------------------------------------ triples

    def _triples(self, subject, pairs) -> list[ast.TriplePattern]:
        """The triple patterns of a subject and its (verb, objects) list, nested nodes expanded."""
        triples: list[ast.TriplePattern] = []
        if isinstance(subject, _TriplesNode):
            triples.extend(subject.triples)
            subject = subject.term
        first = True
        for verb, objects in pairs:
            for obj in objects:
                nested = None
                if isinstance(obj, _TriplesNode):
                    nested, obj = obj.triples, obj.term
                start = subject.span if first else verb.span
                triples.append(ast.TriplePattern(subject, verb, obj, span=_cover(start, obj.span)))
                first = False
                if nested:
                    triples.extend(nested)
        return triples

    def _pairs(self, children) -> list[tuple]:
        return [(self._verb(children[i]), children[i + 1]) for i in range(0, len(children), 2)]

    def triples_same_subject(self, at, children):
        subject, pairs = children
        return self._triples(subject, pairs)

    triples_same_subject_path = triples_same_subject

    def property_list_not_empty(self, at, children):
        return self._pairs(children)

    property_list_path_not_empty = property_list_not_empty

    def property_list(self, at, children):
        return children[0] if children else []

    property_list_path = property_list

    def object_list(self, at, children):
        return children

    object_list_path = object_list

    def construct_template(self, at, children):
        return children[0] or []

    def construct_triples(self, at, children):
        return _flatten(children)

    def blank_node_property_list(self, at, children):
        node = self._fresh_blank_node(self._span(at))
        return _TriplesNode(node, self._triples(node, children[0]))

    blank_node_property_list_path = blank_node_property_list

    def collection(self, at, children):
        triples: list[ast.TriplePattern] = []
        items = [(c.term, c.triples) if isinstance(c, _TriplesNode) else (c, None) for c in children]
        head = cell = self._fresh_blank_node(self._span(at))
        for index, (item, nested) in enumerate(items):
            span = item.span
            triples.append(ast.TriplePattern(cell, IRI(RDF_FIRST, span=span), item, span=span))
            if nested:
                triples.extend(nested)
            last = index + 1 == len(items)
            following = IRI(RDF_NIL, span=span) if last else self._fresh_blank_node(items[index + 1][0].span)
            triples.append(ast.TriplePattern(cell, IRI(RDF_REST, span=span), following, span=span))
            cell = following
        return _TriplesNode(head, triples)

    collection_path = collection

    # ------------------------------------------------------------------ property paths

    def path(self, at, children):
        return ast.PathAlternative(tuple(self._verb(c) for c in children), span=self._span(at))

    def path_sequence(self, at, children):
        return ast.PathSequence(tuple(self._verb(c) for c in children), span=self._span(at))

    def path_elt_or_inverse(self, at, children):
        return ast.PathMod(self._verb(children[0]), children[1], span=self._span(at))

    def path_mod(self, at, children):
        return children[0].value

    def path_inverse(self, at, children):
        span = self._span(at)
        path = self._verb(children[0])
        if len(children) == 2:  # `^p*` is the inverse of `p*`
            path = ast.PathMod(path, children[1], span=_cover(path.span, span))
        return ast.PathInverse(path, span=span)

    def path_negated(self, at, children):
        return replace(children[0], span=self._span(at))

    def path_negated_property_set(self, at, children):
        members = [c for c in children if isinstance(c, tuple)]
        forward = tuple(iri for inverse, iri in members if not inverse)
        backward = tuple(iri for inverse, iri in members if inverse)
        return ast.PathNegatedSet(forward, backward, span=self._span(at))

    def path_one_in_property_set(self, at, children):
        return False, self._verb(children[0])

    def path_one_inverse(self, at, children):
        return True, self._verb(children[0])

    # ------------------------------------------------------------------ terms

    def var(self, at, children):
        token = children[0]
        return Var(token[1:], span=self._token_span(token))

    def iri(self, at, children):
        token = children[0]
        span = self._token_span(token)
        if token[0] == "<":
            return IRI(resolve_iri(self.base, token[1:-1]), span=span)
        prefix, _, local = token.partition(":")
        namespace = self.prefixes.get(prefix)
        if namespace is None:
            msg = f"undeclared prefix '{prefix}:'; declare it with PREFIX {prefix}: <…>"
            raise self._error(msg, token.start_pos, token.start_pos + len(prefix) + 1)
        return IRI(namespace + unescape_local_name(local), span=span)

    def blank_node(self, at, children):
        token = children[0]
        span = self._token_span(token)
        if token.startswith("_:"):
            return BlankNode(token[2:], span=span)
        return self._fresh_blank_node(span)

    def nil(self, at, children):
        return IRI(RDF_NIL, span=self._span(at))

    def string(self, at, children):
        return _string_value(children[0])

    def rdf_literal(self, at, children):
        span = self._span(at)
        value = _string_value(children[0])
        if len(children) == 1:
            return Literal(value, span=span)
        annotation = children[1]
        if isinstance(annotation, IRI):
            datatype = annotation.value
            return Literal(value, None if datatype == XSD_STRING else datatype, span=span)
        return Literal(value, language=annotation[1:].lower(), span=span)

    def _number(self, at, children):
        lexical = children[0].value
        if "e" in lexical or "E" in lexical:
            datatype = XSD_DOUBLE
        elif "." in lexical:
            datatype = XSD_DECIMAL
        else:
            datatype = XSD_INTEGER
        return Literal(lexical, datatype, span=self._span(at))

    numeric_literal_unsigned = numeric_literal_positive = numeric_literal_negative = _number

    def boolean_literal(self, at, children):
        return Literal(children[0].lower(), XSD_BOOLEAN, span=self._span(at))

    # ------------------------------------------------------------------ expressions

    def _fold(self, first, rest):
        """Left-associative binary operations from ``first`` and (operator, operand) pairs."""
        result = first
        for op, operand in rest:
            result = ast.BinaryOp(op, result, operand, span=_cover(result.span, operand.span))
        return result

    def expression(self, at, children):
        return self._fold(children[0], [("||", c) for c in children[1:]])

    def conditional_and_expression(self, at, children):
        return self._fold(children[0], [("&&", c) for c in children[1:]])

    def relational_expression(self, at, children):
        left, op, right = children
        return ast.BinaryOp(op.value, left, right, span=self._span(at))

    def in_expression(self, at, children):
        return ast.In(children[0], children[1], span=self._span(at))

    def not_in_expression(self, at, children):
        return ast.In(children[0], children[1], negated=True, span=self._span(at))

    def additive_expression(self, at, children):
        rest = []
        index = 1
        while index < len(children):
            child = children[index]
            if isinstance(child, Token):
                rest.append((child.value, children[index + 1]))
                index += 2
            else:
                rest.append(child)
                index += 1
        return self._fold(children[0], rest)

    def signed_product(self, at, children):
        signed, *rest = children
        # `?x -2 * ?y` is `?x - (2 * ?y)`: the literal's sign is the additive operator.
        span = signed.span
        unsigned_span = self.source.span(at[0] + 1, at[0] + len(signed.value)) if span else None
        unsigned = Literal(signed.value[1:], signed.datatype, span=unsigned_span)
        product = self._fold(unsigned, [(rest[i].value, rest[i + 1]) for i in range(0, len(rest), 2)])
        return signed.value[0], product

    def multiplicative_expression(self, at, children):
        return self._fold(children[0], [(children[i].value, children[i + 1]) for i in range(1, len(children), 2)])

    def unary_expression(self, at, children):
        op, operand = children
        return ast.UnaryOp(op.value, operand, span=self._span(at))

    def builtin_call(self, at, children):
        head = children[0]
        if not isinstance(head, Token):
            return head
        args = []
        for child in children[1:]:
            if isinstance(child, tuple):
                args.extend(child)
            elif not isinstance(child, Token):  # NIL: no arguments
                args.append(child)
        return ast.BuiltinCall(head.upper(), tuple(args), span=self._span(at))

    def regex_expression(self, at, children):
        return ast.BuiltinCall("REGEX", tuple(children), span=self._span(at))

    def substring_expression(self, at, children):
        return ast.BuiltinCall("SUBSTR", tuple(children), span=self._span(at))

    def str_replace_expression(self, at, children):
        return ast.BuiltinCall("REPLACE", tuple(children), span=self._span(at))

    def exists_func(self, at, children):
        return ast.Exists(children[0], span=self._span(at))

    def not_exists_func(self, at, children):
        return ast.Exists(children[0], negated=True, span=self._span(at))

    def aggregate(self, at, children):
        name, distinct, expr, *separator = children
        if isinstance(expr, Token):  # COUNT(*)
            expr = None
        return ast.Aggregate(
            name.upper(), expr, distinct is not None, separator[0] if separator else None, span=self._span(at)
        )

    def seq_expression(self, at, children):
        _, *steps = children
        return ast.Seq(tuple(steps), span=self._span(at))

    def seq_step(self, at, children):
        negated, var, quantifier, alias = children
        minimum, maximum = quantifier if quantifier is not None else (1, 1)
        return ast.SeqStep(var, negated is not None, minimum, maximum, alias, span=self._span(at))

    def seq_not(self, at, children):
        return True

    def seq_one_or_more(self, at, children):
        return 1, None

    def seq_zero_or_more(self, at, children):
        return 0, None

    def seq_optional(self, at, children):
        return 0, 1

    def seq_exactly(self, at, children):
        count = self._seq_count(children[0])
        return count, count

    def seq_between(self, at, children):
        low, high = children
        minimum, maximum = self._seq_count(low), self._seq_count(high)
        if minimum > maximum:
            msg = f"a SEQ quantifier {{{low},{high}}} needs its minimum at most its maximum"
            raise self._error(msg, low.start_pos, high.end_pos)
        return minimum, maximum

    def _seq_count(self, token: Token) -> int:
        return self._bounded_int(token, f"a SEQ quantifier counts at most {MAX_COUNT} events", MAX_COUNT)

    def function_call(self, at, children):
        iri, (distinct, args) = children
        return ast.FunctionCall(iri, args, distinct, span=self._span(at))

    def arg_list(self, at, children):
        if isinstance(children[0], Token) and children[0].startswith("("):
            return False, ()
        distinct, *args = children
        return distinct is not None, tuple(args)

    def expression_list(self, at, children):
        if len(children) == 1 and isinstance(children[0], Token):
            return ()
        return tuple(children)

    # ------------------------------------------------------------------ CQELS / RSP-QL / C-SPARQL

    def stream_short_name(self, at, children):
        """A bare CQELS-QL 2.0 stream name: the stream ``stream_base`` + name, as over HTTP."""
        return IRI(self.stream_base + str(children[0]), span=self._span(at))

    def stream_dataset(self, at, children):
        keyword, stream, window = children
        self._continuous_only("FROM STREAM", keyword.start_pos, keyword.end_pos)
        self._declared_windows.setdefault(stream, window)
        return ast.StreamDataset(stream, window, span=self._span(at))

    def static_graph(self, at, children):
        # ``STATIC <g> …`` or ``[NAMED] <g> …``: the first child is the STATIC or NAMED keyword (or None).
        keyword, graph, *options = children
        static = keyword is not None and keyword.upper() == "STATIC"
        named = keyword is not None and not static
        depth = next((value for kind, value in options if kind == "depth"), None)
        cache_ms = next((value for kind, value in options if kind == "cache"), None)
        for kind in ("depth", "cache"):
            repeated = [value for option_kind, value in options if option_kind == kind]
            if len(repeated) > 1:
                word = "WITH DEPTH" if kind == "depth" else "CACHE"
                raise self._error_at(f"{word} is given twice for {stream_name(graph)}; give it once", self._span(at))
        return ast.DatasetClause(
            graph, named=named, static=static, depth=depth, cache_ms=cache_ms, span=self._span(at)
        )

    def static_depth(self, at, children):
        return "depth", self._bounded_int(children[0], f"WITH DEPTH is at most {MAX_COUNT}", MAX_COUNT)

    def static_cache(self, at, children):
        return "cache", self._duration(children[0])

    def named_window(self, at, children):
        named, window_keyword, name, stream, window = children
        self._continuous_only("FROM NAMED WINDOW", named.start_pos, window_keyword.end_pos)
        return ast.NamedWindow(name, stream, window, span=self._span(at))

    def window_pattern(self, at, children):
        keyword, name, pattern = children
        self._continuous_only("WINDOW", keyword.start_pos, keyword.end_pos)
        return ast.WindowPattern(name, pattern, span=self._span(at))

    def stream_pattern(self, at, children):
        keyword, window_before, stream, window_after, pattern = children
        self._continuous_only("STREAM", keyword.start_pos, keyword.end_pos)
        span = self._span(at)
        if window_before is not None and window_after is not None:
            msg = "a STREAM block takes one window, before or after the stream name, not both"
            raise self._error_at(msg, span)
        window = window_before if window_before is not None else window_after
        declared = window is None and stream in self._declared_windows
        if declared:
            window = self._declared_windows[stream]
        elif window is None:
            msg = (
                f"STREAM {stream_name(stream)} needs a window, "
                "e.g. [RANGE 30s], [RANGE 1m SLIDE 10s], [NOW] or [TRIPLES 10], "
                "or a FROM STREAM clause declaring one for it"
            )
            raise self._error_at(msg, _cover(self._token_span(keyword), stream.span))
        # A nested STREAM block was checked when built, so it holds a triple pattern: the walk stops
        # there, which keeps nested blocks linear (walking each one to its bottom was quadratic).
        if not any(isinstance(node, (ast.TriplePattern, ast.StreamPattern)) for node in walk(pattern)):
            raise self._error_at("a STREAM block needs at least one triple pattern", span)
        return ast.StreamPattern(stream, window, pattern, declared, span=span)

    def window(self, at, children):
        return children[0]

    def window_with_policy(self, at, children):
        window, (emit, lateness_ms) = children
        return PolicyWindow(window, emit, lateness_ms)

    def window_policy(self, at, children):
        if len(children) == 1:  # LATENESS d alone
            return None, self._duration(children[0])
        emit, lateness = children
        return emit.upper(), (self._duration(lateness) if lateness is not None else None)

    def past_window(self, at, children):
        """``[PAST p]`` is ``[RANGE p]`` (the spec: "explicit form of [RANGE Ns]"), with ``STEP s``
        ``[RANGE p STEP s]``; with a FUTURE extent it is directional."""
        _, past, _, future, step = children
        if future is None:
            if step is None:
                return RangeWindow(self._positive_range(past))
            return self._sliding(at, past, step, "PAST", "STEP")
        return self._directional(past, future, step)

    def past_future_window(self, at, children):
        past, _, future, step = children
        return self._directional(past, future, step)

    def future_window(self, at, children):
        _, future, step = children
        return self._directional(None, future, step)

    def _directional(self, past: Token | None, future: Token, step: Token | None) -> DirectionalWindow:
        past_ms = self._duration(past) if past is not None else 0
        future_ms = self._duration(future)
        if future_ms <= 0:
            raise self._error("a window FUTURE must be longer than 0", future.start_pos, future.end_pos)
        step_ms = self._duration(step) if step is not None else None
        if step_ms is not None and step_ms <= 0:
            raise self._error("a window STEP must be longer than 0", step.start_pos, step.end_pos)
        return DirectionalWindow(past_ms, future_ms, step_ms)

    def count_directional_window(self, at, children):
        _, past, _, future = children
        return self._count_directional(past, future)

    def count_future_window(self, at, children):
        _, future = children
        return self._count_directional(None, future)

    def _count_directional(self, past: Token | None, future: Token | None) -> DirectionalWindow:
        past_count = self._window_triples(past) if past is not None else 0
        future_count = self._window_triples(future) if future is not None else 0
        if not past_count and not future_count:
            token = future if future is not None else past
            raise self._error("a TRIPLES window needs at least 1 triple", token.start_pos, token.end_pos)
        return DirectionalWindow(past_count, future_count, count=True)

    def _duration(self, token: Token) -> int:
        try:
            return parse_duration(token.value)
        except ValueError as error:
            raise self._error(str(error), token.start_pos, token.end_pos) from None

    def _positive_range(self, token: Token) -> int:
        range_ms = self._duration(token)
        if range_ms <= 0:
            raise self._error("a window RANGE must be longer than 0", token.start_pos, token.end_pos)
        return range_ms

    def range_window(self, at, children):
        return RangeWindow(self._positive_range(children[0]))

    def sliding_window(self, at, children):
        range_token, slide_token = children
        between = self.source.text[range_token.end_pos : slide_token.start_pos]
        return self._sliding(at, range_token, slide_token, "RANGE", _KEYWORD.search(between).group(0).upper())

    def slide_step_window(self, at, children):
        """CQELS-QL 2.0 ``[SLIDE d STEP s]``, its spelling of ``[RANGE d STEP s]``: ``d`` is the
        window's extent (the spec: "equivalent sliding-window spelling")."""
        extent_token, step_token = children
        return self._sliding(at, extent_token, step_token, "SLIDE", "STEP")

    def _sliding(self, at, range_token: Token, slide_token: Token, extent: str, keyword: str) -> RangeWindow:
        range_ms = self._positive_range(range_token)
        slide_ms = self._duration(slide_token)
        if slide_ms <= 0:
            raise self._error(f"a window {keyword} must be longer than 0", slide_token.start_pos, slide_token.end_pos)
        if slide_ms > range_ms:
            msg = (
                f"{keyword} {slide_token.value} is longer than {extent} {range_token.value}: "
                "triples arriving between two windows would never be seen; "
                f"use a {keyword} of at most {range_token.value}"
            )
            raise self._error(msg, at[0], at[1])
        return RangeWindow(range_ms, slide_ms)

    def tumbling_window(self, at, children):
        range_ms = self._positive_range(children[0])
        return RangeWindow(range_ms, range_ms)

    def now_window(self, at, children):
        return NowWindow()

    def all_window(self, at, children):
        return AllWindow()

    def triples_window(self, at, children):
        token = children[0]
        count = self._window_triples(token)
        if count < 1:
            raise self._error("a TRIPLES (COUNT) window needs at least 1 triple", token.start_pos, token.end_pos)
        return TriplesWindow(count)

    def _window_triples(self, token: Token) -> int:
        msg = f"a TRIPLES (COUNT) window holds at most {MAX_WINDOW_TRIPLES} triples"
        return self._bounded_int(token, msg, MAX_WINDOW_TRIPLES)

    def _bounded_int(self, token: Token, message: str, maximum: int) -> int:
        """An INTEGER token's value, ``message`` past ``maximum`` (its digits are counted first:
        Python refuses to convert an integer of thousands of digits)."""
        digits = token.value.lstrip("0") or "0"
        if len(digits) > len(str(maximum)) or int(digits) > maximum:
            raise self._error(message, token.start_pos, token.end_pos)
        return int(digits)


# A count the engine's 64-bit window states hold with room to spare (memory runs out long before).
MAX_WINDOW_TRIPLES = 1 << 53
_HUGE_COUNT = 1 << 63
# Reference hops and SEQ repetitions: far past anything a query can mean, well inside an int.
MAX_COUNT = 1 << 31


def _string_value(token: Token) -> str:
    quote = 3 if token.startswith(('"""', "'''")) else 1
    return unescape_string(token[quote:-quote])


def stream_name(stream: IRI | Var) -> str:
    return f"?{stream.name}" if isinstance(stream, Var) else f"<{stream.value}>"

