"""Physical operators of the continuous engine, and the one place that picks their implementation.

Ten operators are compiled with Cython (``_*.pyx``, with the join's indexes in ``_indexes.pyx``)
and have a pure-Python twin in the ``reference/`` module of the same name (same constructor, same
output deltas; the property tests compare the two); FILTER and BIND are compiled too
(``_filter.pyx``, ``_extend.pyx``), their twins being ``filter.py`` and ``extend.py``, and so is the
plan's root (``_sink.pyx``, twin ``base.Sink``). What a pair
shares lives once in ``shared/``, imported by both sides. The engine takes these operators from
here: the compiled ones, or the twins under ``CQELS_PURE_PYTHON=1`` (``runtime.compiled``);
``COMPILED`` says which. The other operators (order, path window, static cache, SEQ, stream
windows) have one implementation, in their own modules.

Every compiled operator is a node (``Node``) of the cdef operator base (``_base.pyx``): wired to
another by ``connect``, it pushes batches of id rows and punctuations to it through C; an edge to or
from a Python operator carries Delta lists.
"""

from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python

COMPILED = not use_pure_python()
if COMPILED:
    with compiled_imports("operators"):
        from cqels_endpoint.operators._aggregate import GroupAggregate
        from cqels_endpoint.operators._base import emitted_total, punctuate_all
        from cqels_endpoint.operators._distinct import Distinct
        from cqels_endpoint.operators._extend import Extend
        from cqels_endpoint.operators._filter import Filter
        from cqels_endpoint.operators._join import MultiwayJoin, WindowBuffer
        from cqels_endpoint.operators._mark import Mark
        from cqels_endpoint.operators._negation import Negation
        from cqels_endpoint.operators._optional import OptionalJoin
        from cqels_endpoint.operators._project import Project
        from cqels_endpoint.operators._sink import Sink
        from cqels_endpoint.operators._topk import TopK
        from cqels_endpoint.operators._union import Union
else:
    from cqels_endpoint.operators.base import Sink, emitted_total, punctuate_all
    from cqels_endpoint.operators.extend import Extend
    from cqels_endpoint.operators.filter import Filter
    from cqels_endpoint.operators.reference.aggregate import GroupAggregate
    from cqels_endpoint.operators.reference.distinct import Distinct
    from cqels_endpoint.operators.reference.join import MultiwayJoin, WindowBuffer
    from cqels_endpoint.operators.reference.mark import Mark
    from cqels_endpoint.operators.reference.negation import Negation
    from cqels_endpoint.operators.reference.optional import OptionalJoin
    from cqels_endpoint.operators.reference.project import Project
    from cqels_endpoint.operators.reference.topk import TopK
    from cqels_endpoint.operators.reference.union import Union

__all__ = [
    "COMPILED",
    "Distinct",
    "Extend",
    "Filter",
    "GroupAggregate",
    "Mark",
    "MultiwayJoin",
    "Negation",
    "OptionalJoin",
    "Project",
    "Sink",
    "TopK",
    "Union",
    "WindowBuffer",
    "emitted_total",
    "punctuate_all",
]
