"""The functions on RDF terms of §17.4.2 (isIRI, isBlank, isLiteral, isNumeric, STR, LANG,
DATATYPE, IRI, STRDT, STRLANG) and sameTerm (§17.4.1.8). BNODE, UUID and STRUUID make fresh terms
from the evaluation context (``expressions``), which also passes IRI() its base IRI."""

from __future__ import annotations

from urllib.parse import urljoin

from pyoxigraph import BlankNode, Literal, NamedNode

from cqels_endpoint.runtime.functions.values import Builtin, boolean_literal, numeric, simple_value
from cqels_endpoint.runtime.functions.xsd import FALSE, TRUE, ExpressionError


def fn_str(term) -> Literal:
    if type(term) is NamedNode:
        return Literal(term.value)
    if type(term) is Literal:
        return Literal(term.value)
    raise ExpressionError


def fn_lang(term) -> Literal:
    if type(term) is not Literal:
        raise ExpressionError
    return Literal(term.language or "")


def fn_datatype(term) -> NamedNode:
    if type(term) is not Literal:
        raise ExpressionError
    return term.datatype


def fn_strdt(lexical, datatype) -> Literal:
    text = simple_value(lexical)
    if type(datatype) is not NamedNode:
        raise ExpressionError
    return Literal(text, datatype=datatype)


def fn_strlang(lexical, language) -> Literal:
    text = simple_value(lexical)
    tag = simple_value(language)
    try:
        return Literal(text, language=tag)
    except ValueError:
        raise ExpressionError from None


def fn_iri(term, base_iri: str | None) -> NamedNode:
    if type(term) is NamedNode:
        return term
    text = simple_value(term)
    if base_iri is not None:
        text = urljoin(base_iri, text)
    try:
        return NamedNode(text)
    except ValueError:
        raise ExpressionError from None


def fn_is_iri(term) -> Literal:
    return boolean_literal(type(term) is NamedNode)


def fn_is_blank(term) -> Literal:
    return boolean_literal(type(term) is BlankNode)


def fn_is_literal(term) -> Literal:
    return boolean_literal(type(term) is Literal)


def fn_is_numeric(term) -> Literal:
    try:
        numeric(term)
    except ExpressionError:
        return FALSE
    return TRUE


def fn_same_term(left, right) -> Literal:
    return boolean_literal(left == right)


BUILTINS = {
    "STR": Builtin(fn_str, 1, 1),
    "LANG": Builtin(fn_lang, 1, 1),
    "DATATYPE": Builtin(fn_datatype, 1, 1),
    "STRDT": Builtin(fn_strdt, 2, 2),
    "STRLANG": Builtin(fn_strlang, 2, 2),
    "ISIRI": Builtin(fn_is_iri, 1, 1),
    "ISURI": Builtin(fn_is_iri, 1, 1),
    "ISBLANK": Builtin(fn_is_blank, 1, 1),
    "ISLITERAL": Builtin(fn_is_literal, 1, 1),
    "ISNUMERIC": Builtin(fn_is_numeric, 1, 1),
    "SAMETERM": Builtin(fn_same_term, 2, 2),
}
