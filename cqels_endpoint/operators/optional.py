"""OPTIONAL (left outer join with filter), incremental on both inputs. Only the pure-Python operator
of ``reference/optional.py`` exists (``COMPILED`` is False): a filtered OPTIONAL's cost is the
expression evaluation on decoded terms, which a compiled loop would not reduce."""

from cqels_endpoint.operators.reference.optional import OptionalJoin

COMPILED = False

__all__ = ["COMPILED", "OptionalJoin"]
