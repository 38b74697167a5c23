"""What the type bits of a 64-bit term id say (the layout is documented in ``runtime.encoding``).

Apart from ``encoding`` so that both term dictionaries, the pure-Python one of ``encoding`` and the
compiled one of ``_dictionary.pyx``, name the kinds with the same enums without importing each other.
"""

from __future__ import annotations

from enum import IntEnum

TYPE_SHIFT = 58
TYPE_MASK = 0x1F


class InlineType(IntEnum):
    """Type bits of inline ids."""

    INTEGER = 0
    DECIMAL = 1
    BOOLEAN = 2
    DATETIME = 3
    LONG = 4
    INT = 5
    SHORT = 6
    BYTE = 7
    NON_NEGATIVE_INTEGER = 8
    POSITIVE_INTEGER = 9
    NON_POSITIVE_INTEGER = 10
    NEGATIVE_INTEGER = 11
    UNSIGNED_LONG = 12
    UNSIGNED_INT = 13
    UNSIGNED_SHORT = 14
    UNSIGNED_BYTE = 15


class TermKind(IntEnum):
    """Type bits of dictionary ids."""

    IRI = 0
    BLANK_NODE = 1
    LITERAL = 2
    TRIPLE = 3


def kind_of(term_id: int) -> TermKind | InlineType:
    """What an id stands for, read from its type bits alone.

    >>> kind_of(-(1 << 63) | (InlineType.BOOLEAN << TYPE_SHIFT) | 1), kind_of(TermKind.LITERAL << TYPE_SHIFT)
    (<InlineType.BOOLEAN: 2>, <TermKind.LITERAL: 2>)
    """
    code = (term_id >> TYPE_SHIFT) & TYPE_MASK
    return InlineType(code) if term_id < 0 else TermKind(code)
