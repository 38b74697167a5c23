# distutils: language = c++
"""Compiled EXISTS mark: a (NOT) EXISTS that keeps every left row and appends its truth value.

The matching is the compiled negation's, unchanged (``_negation.pyx``: whether live right rows
match each live left row, maintained on the four cases left ±1, right ±1); only what a left lineage
puts in the output differs (the ``_output`` hook): its row with ``true`` or ``false`` appended,
where the negation keeps or drops the row. At the punctuation a row whose mark flipped is emitted
again (-1 with the old mark, +1 with the new one, under its lineage); a row whose matches changed
without flipping emits nothing. Twin: ``reference/mark.py``.
"""

from cqels_endpoint.operators._base cimport Batch
from cqels_endpoint.operators._negation cimport _NegationCore

from cqels_endpoint.operators._negation import Negation
from cqels_endpoint.operators.shared.mark import FALSE_ID, TRUE_ID, marked_schema


cdef class _MarkCore(_NegationCore):
    def __init__(self, owner, tuple left_schema, tuple right_schema, tuple shared, tuple keys, kind, condition):
        _NegationCore.__init__(self, owner, left_schema, right_schema, shared, keys, kind, condition)
        self.true_id = TRUE_ID
        self.false_id = FALSE_ID

    cdef object _output(self, tuple row, bint matched):
        return row + ((self.true_id if matched == self.wanted_matches else self.false_id),)


class Mark(Negation):
    """Every left row with the value of ``kind`` (EXISTS or NOT EXISTS) appended as ``column``.

    ``condition`` and ``keys`` are the negation's (see ``Negation``); ``kept`` counts the rows output.
    """

    def __init__(self, left_schema, right_schema, kind, condition=None, label="", keys=None, column=""):
        super().__init__(left_schema, right_schema, kind, condition, label, keys)
        left = self.schema
        self.schema = marked_schema(self, column)
        self._core = _MarkCore(self, left, self.right_schema, self.shared, self.keys, self.kind, condition)
        self.out = Batch(len(self.schema))
