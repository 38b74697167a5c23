"""Lark's parse errors → ``QuerySyntaxError`` with a located, readable message.

The generic message names what was found and what the grammar expected, with terminal names turned
into words ("unexpected 'WHERE', expected one of: a variable, '(', '*'"). A few situations get a
message of their own, recognised from the parser state rather than from example inputs, so they
keep working when the grammar changes:

- a window size without a unit (``[RANGE 30]``) and an unknown window keyword (``[SIZE 30s]``);
- an unterminated string, a malformed IRI, and a bracket the query ends before closing.
"""

from __future__ import annotations

import re
from copy import copy

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr, TerminalDef

from cqels_endpoint.errors import QuerySyntaxError
from cqels_endpoint.query._lexical import Source

# Descriptions of the regular-expression terminals (keywords and punctuation describe themselves).
_TERMINAL_WORDS = {
    "IRIREF": "an IRI",
    "PNAME_LN": "a prefixed name",
    "PNAME_NS": "a prefixed name",
    "VAR1": "a variable",
    "VAR2": "a variable",
    "BLANK_NODE_LABEL": "a blank node",
    "ANON": "'[]'",
    "NIL": "'()'",
    "LANGTAG": "a language tag",
    "STRING_LITERAL1": "a string",
    "STRING_LITERAL2": "a string",
    "STRING_LITERAL_LONG1": "a string",
    "STRING_LITERAL_LONG2": "a string",
    "INTEGER": "an integer",
    "DECIMAL": "a number",
    "DOUBLE": "a number",
    "INTEGER_POSITIVE": "a number",
    "DECIMAL_POSITIVE": "a number",
    "DOUBLE_POSITIVE": "a number",
    "INTEGER_NEGATIVE": "a number",
    "DECIMAL_NEGATIVE": "a number",
    "DOUBLE_NEGATIVE": "a number",
    "DURATION": "a duration such as 30s",
    "REGISTER_NAME": "a name",
    "EMIT_POLICY": "ON_UPDATE, ON_CLOSE or EARLY_AND_FINAL",
    "$END": "the end of the query",
}
_NUMBERS = {"INTEGER", "DECIMAL", "DOUBLE"}
_WINDOW_KEYWORDS = {"RANGE", "TRIPLES"}
_MAX_LISTED = 12
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
_OPENERS = {"{": "}", "(": ")", "[": "]"}


def unmangled(name: str) -> str:
    """A terminal or rule name without the namespace lark gives imported names (``sparql11__IRIREF``)."""
    return name.rpartition("__")[2] if "__" in name[1:] else name


def describe_terminals(terminals: list[TerminalDef]) -> dict[str, str]:
    """How each terminal of a grammar is named in error messages."""
    described = {}
    for terminal in terminals:
        pattern = terminal.pattern
        if isinstance(pattern, PatternStr):
            described[terminal.name] = f"'{pattern.value}'"  # keywords as the grammar spells them
        else:
            base = unmangled(terminal.name)
            described[terminal.name] = _TERMINAL_WORDS.get(base, base.lower().replace("_", " "))
    described["$END"] = _TERMINAL_WORDS["$END"]
    return described


def syntax_error(error: UnexpectedInput, source: Source, described: dict[str, str]) -> QuerySyntaxError:
    """The ``QuerySyntaxError`` for a lark parse error on ``source``."""
    text = source.text
    if isinstance(error, UnexpectedToken):
        expected = _accepted(error) or set(error.expected)
        token = error.token
        if token.type == "$END":
            return _unexpected_end(error, source, expected, described)
        return _unexpected(source, token.start_pos, token.end_pos, token.type, expected, described)
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream
        char = text[position]
        expected = _accepted(error) or set(error.allowed or ())
        if char in "\"'":
            # A valid string would have been read as a token, even an unexpected one.
            return _bad_string(source, position)
        return _unexpected(source, position, position + 1, None, expected, described)
    if isinstance(error, UnexpectedEOF):
        return _unexpected_end(error, source, set(error.expected), described)
    return source.error(str(error), 0, 0)


def _unexpected(
    source: Source,
    start: int,
    end: int,
    token_type: str | None,
    expected: set[str],
    described: dict[str, str],
) -> QuerySyntaxError:
    text = source.text
    # A keyword that runs into more letters (`RANGEE`, `SELECTX`) is reported as the whole word.
    word_start = start
    if start > 0 and _WORD_CHAR.match(text, start) and _WORD_CHAR.match(text, start - 1):
        while word_start > 0 and _WORD_CHAR.match(text, word_start - 1):
            word_start -= 1
        end = max(end, _word_end(text, start))
    found = text[word_start:end]
    bases = {unmangled(name) for name in expected}

    if bases == {"DURATION"} and word_start == start and unmangled(token_type or "") in _NUMBERS:
        number = found
        unit_end = _word_end(text, end)
        if unit_end > end:
            unit = text[end:unit_end]
            msg = f"{unit!r} is not a duration unit; use ms, s, m, h, d or w, e.g. {number}s or {number}m"
            return source.error(msg, start, unit_end)
        return source.error(f"window size needs a unit, e.g. {number}s or {number}ms", start, end)
    if bases >= _WINDOW_KEYWORDS or (bases == {"DURATION"} and word_start < start and _opens_window(text, word_start)):
        word_end = _word_end(text, word_start)
        word = text[word_start:word_end] or text[word_start : word_start + 1]
        msg = (
            f"unknown window {word!r}; a window is "
            "[RANGE d], [RANGE d SLIDE d], [RANGE d TUMBLING], [SLIDE d STEP d], [NOW], [ALL] or [TRIPLES n]"
        )
        return source.error(msg, word_start, max(word_end, word_start + 1))
    if bases == {"DURATION"}:
        return source.error(f"expected a window size such as 30s, 5m or PT1H, found {found!r}", start, end)
    if found.startswith("<") and "IRIREF" in bases:
        line_end = _line_end(text, start)
        msg = "malformed IRI: an IRI is written <…> on one line, without spaces, quotes, braces or backslashes"
        return source.error(msg, start, line_end)
    shown = found if len(found) <= 40 else found[:37] + "..."
    return source.error(f"unexpected {shown!r}, {_expected_list(expected, described)}", word_start, end)


def _unexpected_end(
    error: UnexpectedToken | UnexpectedEOF, source: Source, expected: set[str], described: dict[str, str]
) -> QuerySyntaxError:
    text = source.text
    opener = _innermost_unclosed(error)
    if opener is not None:
        closer = _OPENERS[opener.value]
        msg = f"'{opener.value}' is never closed: the query ends before its '{closer}'"
        return source.error(msg, opener.start_pos, opener.end_pos)
    end = len(text.rstrip())  # the caret goes just after the last character written
    return source.error(f"unexpected end of the query, {_expected_list(expected, described)}", end, end)


def _accepted(error: UnexpectedInput) -> set[str] | None:
    """The terminals the parser accepts at the error, found by feeding each one to a copy of it.

    More precise than the LALR state's lookaheads, which state merging widens. Lark's own
    ``InteractiveParser.accepts`` skips the terminals it imported from another grammar (their
    names, ``sparql11__IRIREF``, are not upper-case), hence this version. No callbacks run.
    """
    interactive = getattr(error, "interactive_parser", None)
    if interactive is None:
        return None
    conf = copy(interactive.parser_state.parse_conf)
    conf.callbacks = {}
    accepted = set()
    for name in interactive.choices():
        if not unmangled(name).isupper() and name != "$END":
            continue  # a rule: the choices mix terminals and non-terminals
        trial = interactive.copy(deepcopy_values=False)
        trial.parser_state.parse_conf = conf
        try:
            trial.feed_token(Token(name, ""))
        except UnexpectedToken:
            continue
        accepted.add(name)
    return accepted


_ECHAR_LETTERS = "tbnrf\"'\\"


def _bad_string(source: Source, position: int) -> QuerySyntaxError:
    """A string the lexer could not read: an escape it does not know, or no closing quote."""
    text = source.text
    quote = text[position]
    long_string = text.startswith(quote * 3, position)
    index = position + (3 if long_string else 1)
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 < len(text) and text[index + 1] in _ECHAR_LETTERS:
                index += 2
                continue
            escape = text[index : index + 2]
            msg = f"invalid escape '{escape}' in a string; the escapes are \\t \\n \\r \\b \\f \\\" \\' \\\\"
            return source.error(msg, index, index + len(escape))
        if char in "\r\n" and not long_string:
            break
        index += 1
    return source.error("unterminated string: the closing quote is missing", position, _line_end(text, position))


def _innermost_unclosed(error: UnexpectedInput) -> Token | None:
    """The last opening bracket still on the parser's stack: tokens stay there until their rule ends."""
    interactive = getattr(error, "interactive_parser", None)
    if interactive is None:
        return None
    for value in reversed(interactive.parser_state.value_stack):
        if isinstance(value, Token) and value.value in _OPENERS:
            return value
    return None


def _expected_list(expected: set[str], described: dict[str, str]) -> str:
    names = sorted({described.get(name, unmangled(name)) for name in expected}, key=lambda d: (d.startswith("'"), d))
    if not names:
        return "expected nothing more"
    if len(names) == 1:
        return f"expected {names[0]}"
    if len(names) > _MAX_LISTED:
        names = [*names[:_MAX_LISTED], "…"]
    return "expected one of: " + ", ".join(names)


def _opens_window(text: str, position: int) -> bool:
    return text[:position].rstrip().endswith("[")


def _word_end(text: str, position: int) -> int:
    while position < len(text) and _WORD_CHAR.match(text, position):
        position += 1
    return position


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text.rstrip("\r\n")) if end == -1 else end
