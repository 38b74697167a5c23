"""Reading protocol parameters and bodies strictly: UTF-8 only, each single-valued parameter once.

werkzeug's ``request.args``/``request.form`` replace undecodable bytes silently; the SPARQL
Protocol wants such requests refused, so parameters are parsed here with ``errors="strict"``.
Every helper raises ``HttpError`` (a JSON 4xx, see ``errors.py``) instead of returning a bad value.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl, urljoin

from flask import request
from werkzeug.datastructures import FileStorage
from werkzeug.http import parse_options_header
from werkzeug.sansio.utils import get_current_url

from cqels_endpoint.http.errors import HttpError, unsupported_message

Params = dict[str, list[str]]

FORM = "application/x-www-form-urlencoded"

# An absolute IRI as SPARQL's IRIREF allows it: a scheme, then no spaces, controls or <>"{}|^`\ .
_ABSOLUTE_IRI = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*\Z')


def _parse(text: str, where: str) -> Params:
    try:
        pairs = parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise HttpError(400, f"the {where} has percent-encoded bytes that are not UTF-8") from None
    params: Params = {}
    for name, value in pairs:
        params.setdefault(name, []).append(value)
    return params


def base_iri() -> str:
    """The request URL without its query string (``request.base_url``), the base IRI of what the
    request sends; remembered per host and path, as working it out costs a tenth of a lookup."""
    return base_iri_of(request.scheme, request.host, request.root_path, request.path)


@lru_cache(maxsize=256)
def base_iri_of(scheme: str, host: str, root_path: str, path: str) -> str:
    """The URL of ``path`` (decoded) under ``root_path`` on ``host``, as werkzeug writes it."""
    return get_current_url(scheme, host, root_path, path)


def url_params() -> Params:
    """The parameters of the request URL's query string."""
    return query_params(request.query_string)


def query_params(query_string: bytes) -> Params:
    """The parameters of a raw query string."""
    try:
        text = query_string.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpError(400, "the query string is not UTF-8") from None
    return _parse(text, "query string")


def check_utf8_charset(accepted: list[str], part: FileStorage | None = None) -> None:
    """Refuse a body (or one ``part`` of a multipart body) whose declared charset is not UTF-8
    (the protocols allow nothing else)."""
    body = request if part is None else part
    check_charset(body.content_type, accepted)


def check_charset(content_type: str | None, accepted: list[str]) -> None:
    """Refuse a body of ``content_type`` whose declared charset is not UTF-8."""
    if not is_utf8_charset(parse_options_header(content_type)[1].get("charset")):
        raise HttpError(415, unsupported_message(content_type, accepted))


def is_utf8_charset(charset: str | None) -> bool:
    """Whether a body declaring ``charset`` (None: none declared) is UTF-8."""
    return charset is None or charset.strip().lower() in ("utf-8", "utf8")


def body_text(what: str) -> str:
    """The request body decoded as UTF-8."""
    return decoded(request.get_data(cache=True), what)


def decoded(body: bytes, what: str) -> str:
    """``body`` decoded as UTF-8 (``what`` it holds names it in the 400 otherwise)."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HttpError(400, f"the {what} in the request body is not UTF-8 (byte {error.start})") from None


def form_params() -> Params:
    """The parameters of an ``application/x-www-form-urlencoded`` body."""
    return _parse(body_text("form"), "form body")


def merged(*sources: Params) -> Params:
    params: Params = {}
    for source in sources:
        for name, values in source.items():
            params.setdefault(name, []).extend(values)
    return params


def single(params: Params, name: str, hint: str) -> str | None:
    """The one value of ``name``, None if absent; 400 when it is given more than once."""
    values = params.get(name, [])
    if len(values) > 1:
        raise HttpError(400, f"the {name} parameter is given {len(values)} times; {hint}")
    return values[0] if values else None


def iri(value: str, name: str) -> str:
    """``value`` checked as an absolute IRI (the value of parameter ``name``)."""
    if not _ABSOLUTE_IRI.match(value):
        raise HttpError(400, f"{name}={value!r} is not an absolute IRI (like http://example.org/graph)")
    return value


def iris(params: Params, name: str) -> list[str]:
    """All values of a repeatable IRI parameter such as ``default-graph-uri``."""
    return [iri(value, name) for value in params.get(name, [])]


def resolve_iri(value: str, name: str) -> str:
    """A graph IRI from ``?graph=``: relative references resolve against the request URL."""
    if not value.strip():
        raise HttpError(400, f"{name}= is empty; give the graph IRI")
    if not _ABSOLUTE_IRI.match(value):
        value = urljoin(base_iri(), value)
    return iri(value, name)


def operation_and_params(name: str, direct_media_type: str) -> tuple[str, Params]:
    """The text of a protocol operation (``name`` is "query" or "update") and all its parameters.

    It comes as ``GET ?name=``, as a form field ``name=`` (URL parameters count too, so a text
    given in both is refused as given twice), or as the whole body typed ``direct_media_type``.
    """
    accepted = [direct_media_type, FORM]
    twice = f"send exactly one {name} (in the URL, a form field or the body, not several)"
    from_url = url_params()
    if request.method == "GET":
        text = single(from_url, name, twice)
        if text is None:
            raise HttpError(400, f"no {name}: send ?{name}=… or POST it as {direct_media_type}")
        return text, from_url
    if request.mimetype == FORM:
        check_utf8_charset(accepted)
        params = merged(from_url, form_params())
        text = single(params, name, twice)
        if text is None:
            raise HttpError(400, f"the form has no {name}= field")
        return text, params
    if request.mimetype == direct_media_type:
        check_utf8_charset(accepted)
        if name in from_url:
            raise HttpError(400, f"the {name} parameter is given in the URL and as the body; {twice}")
        return body_text(name), from_url
    raise HttpError(415, unsupported_message(request.content_type, accepted))
