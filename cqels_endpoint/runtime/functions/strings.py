"""The functions on strings of §17.4.3: STRLEN, SUBSTR, UCASE, LCASE, STRSTARTS, STRENDS,
CONTAINS, STRBEFORE, STRAFTER, ENCODE_FOR_URI, CONCAT, langMatches, and the XPath regular
expressions of REGEX and REPLACE (translated to Python ``re``; the expression compiler builds a
constant pattern once, so these two are not in ``BUILTINS``)."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from urllib.parse import quote

from pyoxigraph import Literal

from cqels_endpoint.runtime.functions.numerics import round_half_up
from cqels_endpoint.runtime.functions.values import (
    Builtin,
    boolean_literal,
    integer_literal,
    numeric,
    simple_value,
    string_like,
    string_value,
)
from cqels_endpoint.runtime.functions.xsd import EMPTY_STRING, ExpressionError, promote


def _compatible(left, right) -> tuple[str, str | None, str]:
    """The argument-compatibility rule of §17.4.3.1.1; returns (text, language of the first, text)."""
    text, language = string_value(left)
    other, other_language = string_value(right)
    if other_language is not None and other_language != language:
        raise ExpressionError
    return text, language, other


def fn_strlen(term) -> Literal:
    return integer_literal(len(string_value(term)[0]))


def fn_substr(source, start, length=None) -> Literal:
    text, language = string_value(source)
    start_rank, start_value = numeric(start)
    if length is None:
        first = round_half_up(start_rank, start_value)
        end = math.inf
    else:
        length_rank, length_value = numeric(length)
        rank = start_rank if start_rank > length_rank else length_rank  # promote both (1.5 with 2e0)
        first = round_half_up(rank, promote(start_value, start_rank, rank))
        end = first + round_half_up(rank, promote(length_value, length_rank, rank))
    # XPath fn:substring keeps the characters at 1-based positions p with first <= p < end; NaN keeps none.
    if not (first <= len(text) and first < end):
        return string_like("", language)
    begin = 1 if first < 1 else int(first)
    stop = len(text) + 1 if end > len(text) else int(end)
    if stop <= begin:
        return string_like("", language)
    return string_like(text[begin - 1 : stop - 1], language)


def fn_ucase(term) -> Literal:
    text, language = string_value(term)
    return string_like(text.upper(), language)


def fn_lcase(term) -> Literal:
    text, language = string_value(term)
    return string_like(text.lower(), language)


def fn_strstarts(left, right) -> Literal:
    text, _, prefix = _compatible(left, right)
    return boolean_literal(text.startswith(prefix))


def fn_strends(left, right) -> Literal:
    text, _, suffix = _compatible(left, right)
    return boolean_literal(text.endswith(suffix))


def fn_contains(left, right) -> Literal:
    text, _, part = _compatible(left, right)
    return boolean_literal(part in text)


def fn_strbefore(left, right) -> Literal:
    text, language, part = _compatible(left, right)
    index = text.find(part)
    if index < 0:
        return EMPTY_STRING
    return string_like(text[:index], language)


def fn_strafter(left, right) -> Literal:
    text, language, part = _compatible(left, right)
    index = text.find(part)
    if index < 0:
        return EMPTY_STRING
    return string_like(text[index + len(part) :], language)


def fn_encode_for_uri(term) -> Literal:
    return Literal(quote(string_value(term)[0], safe="-_.~", encoding="utf-8"))


def fn_concat(*terms) -> Literal:
    parts = []
    common: str | None = None
    for index, term in enumerate(terms):
        text, language = string_value(term)
        parts.append(text)
        if index == 0:
            common = language
        elif language != common:
            common = None
    return string_like("".join(parts), common)


def fn_lang_matches(tag, language_range) -> Literal:
    tag_text = simple_value(tag).lower()
    range_text = simple_value(language_range).lower()
    if range_text == "*":
        return boolean_literal(tag_text != "")
    return boolean_literal(tag_text == range_text or tag_text.startswith(range_text + "-"))


# --------------------------------------------------------------------------- regular expressions

_FLAGS = {"s": re.DOTALL, "m": re.MULTILINE, "i": re.IGNORECASE}
_CATEGORY_CODES: dict[str, list[int]] = {}


def _class_ranges(codes: list[int]) -> str:
    """Sorted code points as the inside of a character class (``a-zé``)."""
    parts = []
    start = previous = codes[0]
    for code in [*codes[1:], None]:
        if code is not None and code == previous + 1:
            previous = code
            continue
        parts.append(re.escape(chr(start)) + ("" if start == previous else "-" + re.escape(chr(previous))))
        if code is not None:
            start = previous = code
    return "".join(parts)


@lru_cache(maxsize=64)
def _category_ranges(name: str, negated: bool) -> str:
    r"""``\p{name}`` (or ``\P{name}``) as the inside of a Python character class, for the Unicode
    general categories (``L``, ``Lu``, ``Nd``, …): Python's ``re`` has no ``\p``. Blocks
    (``IsBasicLatin``) are rejected. The table is built on first use (about half a second)."""
    if not _CATEGORY_CODES:
        import sys
        import unicodedata

        for code in range(sys.maxunicode + 1):
            category = unicodedata.category(chr(code))
            _CATEGORY_CODES.setdefault(category, []).append(code)
            _CATEGORY_CODES.setdefault(category[0], []).append(code)
    codes = _CATEGORY_CODES.get(name)
    if codes is None:
        raise ExpressionError
    if negated:
        members = set(codes)
        codes = [code for code in range(0x110000) if code not in members]
    return _class_ranges(codes)


def _translate_regex(pattern: str, flags: str) -> re.Pattern:
    r"""An XPath regular expression (F&O §5.6) as a Python ``re`` pattern.

    XPath and Python agree on the common syntax; the translation handles what differs: ``$``
    without the ``m`` flag matches only at the very end (Python's also matches before a final
    newline), the ``x`` flag strips whitespace outside character classes, ``q`` quotes the whole
    pattern, the Unicode category escapes ``\p{Lu}``/``\P{L}`` become explicit classes, and the
    XML name classes (``\i``, ``\c``), Unicode blocks and class subtraction are rejected (an error).
    """
    python_flags = 0
    for flag in flags:
        if flag in _FLAGS:
            python_flags |= _FLAGS[flag]
        elif flag not in "xq":
            raise ExpressionError
    if "q" in flags:
        return re.compile(re.escape(pattern), python_flags)
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 >= len(pattern):
                raise ExpressionError
            escaped = pattern[index + 1]
            if escaped in "pP":
                close = pattern.find("}", index)
                if pattern[index + 2 : index + 3] != "{" or close < 0:
                    raise ExpressionError
                # Inside a class the ranges are spliced in (the complement computed for \P).
                ranges = _category_ranges(pattern[index + 3 : close], escaped == "P" and in_class)
                if in_class:
                    out.append(ranges)
                else:
                    out.append(f"[{ranges}]" if escaped == "p" else f"[^{ranges}]")
                index = close + 1
                continue
            if escaped in "iIcC":
                raise ExpressionError  # XML name-character classes: not in Python re
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[" and out and out[-1] == "-":
                raise ExpressionError  # class subtraction [a-z-[aeiou]]
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern[index + 1 : index + 2] == "^":
                out.append("^")
                index += 1
            if pattern[index + 1 : index + 2] == "]":
                out.append("\\]")  # a leading ] is a literal, as in XPath
                index += 1
        elif "x" in flags and char in " \t\n\r":
            pass
        elif char == "$" and not python_flags & re.MULTILINE:
            out.append(r"(?!\n)\Z")
        else:
            out.append(char)
        index += 1
    try:
        return re.compile("".join(out), python_flags)
    except (re.error, OverflowError):
        raise ExpressionError from None


@lru_cache(maxsize=256)
def compile_regex(pattern: str, flags: str) -> re.Pattern:
    return _translate_regex(pattern, flags)


def regex_flags(term) -> str:
    return simple_value(term)


def regex_matches(text_term, compiled: re.Pattern) -> Literal:
    text, _ = string_value(text_term)
    return boolean_literal(compiled.search(text) is not None)


_REPLACEMENT_RE = re.compile(r"\\(.)|\$([0-9])|(\\)$|(\$)")


def translate_replacement(replacement: str, groups: int) -> str:
    """An XPath replacement string (``$n`` groups, ``\\$`` and ``\\\\`` escapes) as a Python template."""
    out: list[str] = []
    position = 0
    for match in _REPLACEMENT_RE.finditer(replacement):
        out.append(replacement[position : match.start()].replace("\\", "\\\\"))
        escaped, group, trailing_backslash, lone_dollar = match.groups()
        if trailing_backslash is not None or lone_dollar is not None:
            raise ExpressionError
        if escaped is not None:
            if escaped not in "\\$":
                raise ExpressionError
            out.append("\\\\" if escaped == "\\" else "$")
        else:
            # $n beyond the groups is the empty string (F&O fn:replace)
            out.append(f"\\g<{group}>" if int(group) <= groups else "")
        position = match.end()
    out.append(replacement[position:].replace("\\", "\\\\"))
    return "".join(out)


def regex_replace(text_term, compiled: re.Pattern, replacement_term) -> Literal:
    text, language = string_value(text_term)
    replacement = simple_value(replacement_term)
    if compiled.search("") is not None:
        raise ExpressionError  # F&O err:FORX0003: a pattern that matches the empty string
    template = translate_replacement(replacement, compiled.groups)
    return string_like(compiled.sub(template, text), language)


BUILTINS = {
    "STRLEN": Builtin(fn_strlen, 1, 1),
    "SUBSTR": Builtin(fn_substr, 2, 3),
    "UCASE": Builtin(fn_ucase, 1, 1),
    "LCASE": Builtin(fn_lcase, 1, 1),
    "STRSTARTS": Builtin(fn_strstarts, 2, 2),
    "STRENDS": Builtin(fn_strends, 2, 2),
    "CONTAINS": Builtin(fn_contains, 2, 2),
    "STRBEFORE": Builtin(fn_strbefore, 2, 2),
    "STRAFTER": Builtin(fn_strafter, 2, 2),
    "ENCODE_FOR_URI": Builtin(fn_encode_for_uri, 1, 1),
    "CONCAT": Builtin(fn_concat, 0, None),
    "LANGMATCHES": Builtin(fn_lang_matches, 2, 2),
}
