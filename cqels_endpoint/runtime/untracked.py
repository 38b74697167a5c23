"""Long-lived rows of terms kept out of CPython's cyclic garbage collector.

A full collection walks every object the collector tracks. pyoxigraph terms are tracked (their
type has the GC flag), and so is a tuple holding one, so a static cache of a million rows of three
terms held as terms (``caches.rebuild.CacheState.content``, the rows a rebuild is diffed against)
made four million tracked objects: every full collection, triggered by the allocations of the next
build, walked them for about 0.7 s with the GIL held, and no push could run meanwhile.

``untrack_row`` untracks a row tuple and its terms as they are made (``caches.engines.compute_cache``,
the Spark engine's decoded rows); ``untrack_term`` one term (the dictionary's decoded terms);
``untrack_tuple`` a tuple of untracked rows (``caches.engines.RowChunks``) at once, which CPython
would do only at the first collection that sees it, walking its rows then. This is
safe because none of them can be part of a reference cycle, which is all the collector is for: a
pyoxigraph term holds Rust values and no Python object (``gc.get_referents`` gives only its type,
it takes no attributes), and a tuple of such terms and None refers to nothing else and cannot
change. They are still freed by reference counting the moment the last reference goes (an
installed cache replaced, a build dropped), exactly as before; CPython untracks tuples and dicts of
atomic values the same way. Anything else in a row leaves it tracked.

The pure-Python twin (``CQELS_PURE_PYTHON=1``) cannot untrack an object from Python: it returns
the row as is. Results are the same either way; only the collector's pauses differ.
"""

from __future__ import annotations

from typing import TypeVar

from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python

T = TypeVar("T")

if use_pure_python():

    def untrack_row(row: T) -> T:
        """``row`` as is (module docstring)."""
        return row

    def untrack_term(term: T) -> T:
        """``term`` as is (module docstring)."""
        return term

    def untrack_tuple(items: T) -> T:
        """``items`` as is (module docstring)."""
        return items

else:
    with compiled_imports("untracked rows"):
        from cqels_endpoint.runtime._untracked import untrack_row, untrack_term, untrack_tuple

__all__ = ["untrack_row", "untrack_term", "untrack_tuple"]
