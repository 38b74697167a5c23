"""The closed sets of names a query chooses from, as string-valued enums: they compare equal to
their text (``R2S.ISTREAM == "ISTREAM"``) and serialise as it in JSON, where they cross HTTP and
the command line."""

from __future__ import annotations

from enum import Enum

from cqels_endpoint.errors import ArgumentError


class Named(str, Enum):
    """A string-valued enum whose ``str()`` and ``repr()`` are its value's."""

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        # Shown as the text it stands for: emissions and rows print as they did with plain strings.
        return repr(self.value)

    @classmethod
    def choose(cls, text: str, what: str):
        """The member whose value is ``text``; ``ArgumentError`` naming ``what`` and the choices otherwise."""
        try:
            return cls(text)
        except ValueError:
            msg = f"{what} must be one of {', '.join(m.value for m in cls)}, not {text!r}"
            raise ArgumentError(msg) from None


class QueryForm(Named):
    SELECT = "SELECT"
    CONSTRUCT = "CONSTRUCT"
    ASK = "ASK"
    DESCRIBE = "DESCRIBE"


class R2S(Named):
    """The relation-to-stream operator of a continuous query: what of Γ each evaluation emits."""

    ISTREAM = "ISTREAM"  # the rows that entered Γ
    RSTREAM = "RSTREAM"  # the whole of Γ
    DSTREAM = "DSTREAM"  # the rows that left Γ

