"""Build the AST in lark's LALR reduce callbacks, without a parse tree.

Lark's default pipeline builds a ``Tree`` per rule, propagates positions through every reduction
and is then walked again by a transformer; on SPARQL's deep rule chains (ten unit rules between an
expression and its variable) that is most of the parse time. Here each rule's callback does what
lark's tree builder would (drop anonymous tokens, insert ``[…]`` placeholders, splice ``_rule``
and repetition helpers, pass a ``?rule``'s single child through) and then calls the builder's
handler for the rule with the rule's (start, end) offsets, so spans cost two attribute reads.

The callbacks are installed once on the parser; the builder of the parse in progress comes from a
thread-local, so parses in several threads do not mix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from lark import Token
from lark.grammar import Rule

_CURRENT = threading.local()


class Built:
    """A reduced rule on lark's value stack: the handler's result and the rule's offsets."""

    __slots__ = ("end", "start", "value")

    def __init__(self, value, start: int | None, end: int | None):
        self.value = value
        self.start = start
        self.end = end


class Spliced(Built):
    """The children of an inlined rule (``_rule``, ``x*`` helpers), spliced into the parent."""

    __slots__ = ()


def unwrap(value):
    """The AST value of what the parser returns for a start rule."""
    return value.value if isinstance(value, Built) else value


class Building:
    """Context manager making ``builder`` the target of the callbacks in this thread."""

    def __init__(self, builder: object):
        self.builder = builder

    def __enter__(self) -> None:
        _CURRENT.builder = self.builder

    def __exit__(self, *exc_info: object) -> None:
        _CURRENT.builder = None


def install(parser: object, handler_for: Callable[[str], Callable | None]) -> None:
    """Replace the callbacks of lark's LALR parser with ones that call the builder's handlers.

    ``parser`` is ``Lark.parser.parser.parser`` (lark's ``_Parser``, holding ``callbacks`` and the
    parse table). ``handler_for(rule_name)`` gives the unbound handler of a rule or alias (``None``
    if there is none); a rule that can produce a node and has no handler is a programming error,
    raised here.
    """
    callbacks = parser.callbacks
    built = {rule: _callback(rule, handler_for) for rule in callbacks}
    # Key the callbacks by the very Rule objects of the parse table (a parser loaded from lark's cache
    # has equal but distinct ones), so each lookup is an identity hit, not a Rule.__eq__ call.
    for actions in parser.parse_table.states.values():
        for _action, argument in actions.values():
            if isinstance(argument, Rule) and argument in built:
                built[argument] = built.pop(argument)
    callbacks.clear()
    callbacks.update(built)


def _layout(rule: Rule) -> tuple[tuple[tuple[int, bool, int], ...], int]:
    """Which children a rule keeps: (index, splice it?, Nones to insert before it), trailing Nones.

    The same computation as lark's ``maybe_create_child_filter``.
    """
    expansion = rule.expansion
    if rule.options.empty_indices:
        flags = "".join(str(int(b)) for b in rule.options.empty_indices)
        empty = [len(ones) for ones in flags.split("0")]
    else:
        empty = [0] * (len(expansion) + 1)
    include = []
    nones = 0
    for index, symbol in enumerate(expansion):
        nones += empty[index]
        if rule.options.keep_all_tokens or not (symbol.is_term and symbol.filter_out):
            include.append((index, not symbol.is_term and symbol.name.startswith("_"), nones))
            nones = 0
    return tuple(include), nones + empty[len(expansion)]


def _bounds(raw: list) -> tuple[int | None, int | None]:
    """The start of the first and the end of the last child that matched any text."""
    start = end = None
    for child in raw:
        start = child.start_pos if type(child) is Token else child.start
        if start is not None:
            break
    for child in reversed(raw):
        end = child.end_pos if type(child) is Token else child.end
        if end is not None:
            break
    return start, end


def _callback(rule: Rule, handler_for: Callable[[str], Callable | None]) -> Callable:
    include, trailing = _layout(rule)
    splices = any(expand for _, expand, _ in include)
    padded = trailing or any(nones for _, _, nones in include)
    width = len(include) + sum(n for _, _, n in include) + trailing
    name = rule.alias or rule.origin.name
    inline = rule.origin.name.startswith("_")
    expand1 = rule.options.expand1 and not rule.alias

    if expand1 and width == 1 and len(include) == 1 and not splices:
        position = include[0][0]
        if len(rule.expansion) == 1:
            # A unit rule (`?rule: child`): the child itself.
            return lambda raw: raw[position]

        # One child among anonymous tokens (`?bracketted: "(" expression ")"`): the child's value,
        # placed where the whole rule is, so that the parent's span takes in the tokens too.
        def reduce_container(raw: list):
            child = raw[position]
            start, end = _bounds(raw)
            return Built(child if type(child) is Token else child.value, start, end)

        return reduce_container

    handler = None if inline else handler_for(str(name))
    if handler is None and not inline:
        msg = f"no AST handler for grammar rule {name!r}"
        raise LookupError(msg)

    plain = not (inline or splices or padded or expand1)
    if plain and len(rule.expansion) == 1 == len(include) and rule.expansion[0].is_term:
        # A rule over one token (`var: VAR1`, `iri: IRIREF`, numbers, strings): the most frequent kind.

        def reduce_token(raw: list):
            token = raw[0]
            start, end = token.start_pos, token.end_pos
            return Built(handler(_CURRENT.builder, (start, end), raw), start, end)

        return reduce_token

    if plain:
        # The common shape: some children kept, no placeholders, nothing to splice.
        kept = tuple(index for index, _, _ in include)

        def reduce_plain(raw: list):
            start, end = _bounds(raw)
            values = [child if type(child) is Token else child.value for child in map(raw.__getitem__, kept)]
            return Built(handler(_CURRENT.builder, (start, end), values), start, end)

        return reduce_plain

    def reduce(raw: list):
        start, end = _bounds(raw)
        values: list = []
        for index, expand, nones in include:
            if nones:
                values.extend([None] * nones)
            child = raw[index]
            if expand:
                if values:
                    values.extend(child.value)
                else:
                    values = child.value  # reuse: repetition helpers are left-recursive
            elif type(child) is Token:
                values.append(child)
            else:
                values.append(child.value)
        if trailing:
            values.extend([None] * trailing)

        if inline:
            return Spliced(values, start, end)
        if expand1 and len(values) == 1:
            (value,) = values
            return value if type(value) is Token else Built(value, start, end)
        return Built(handler(_CURRENT.builder, (start, end), values), start, end)

    return reduce
