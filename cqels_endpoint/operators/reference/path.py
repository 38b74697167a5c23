"""Reference twin of ``operators.path.PathWindow``: re-evaluates the path at every tick.

It keeps the window's triples as they came, builds the window graph afresh at every punctuation,
evaluates the path over it and emits the difference with its previous rows (``PathWindowBase``: the
same rows, signs and lineages as the engine's operator, which keeps its graph index up to date and
skips the ticks that did not change its window); the property tests compare the two after every
tick.
"""

from __future__ import annotations

from collections import Counter

from cqels_endpoint.operators.path import PathWindowBase
from cqels_endpoint.runtime.paths import TripleGraph


class PathWindow(PathWindowBase):
    """The path over a graph rebuilt from the window's triples at every tick."""

    def on_punctuation(self, tau: int) -> None:
        self._changed = True
        super().on_punctuation(tau)

    def _solutions(self) -> Counter:
        return self._rows(TripleGraph(self._triples.values()))
