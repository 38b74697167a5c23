"""A latency histogram with fixed buckets, cheap enough to observe every event of every query.

Cumulative on export, as Prometheus histograms are (``http/metrics.py`` renders it).

>>> h = LatencyHistogram((0.001, 0.01))
>>> h.observe(0.0005); h.observe(0.005); h.observe(2.0)
>>> h.cumulative(), h.count, round(h.sum, 4)
([(0.001, 1), (0.01, 2), (inf, 3)], 3, 2.0055)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

# Seconds, from 50 µs (a small eager query) to 10 s (a periodic close of a large window).
DEFAULT_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class LatencyHistogram:
    """Counts of observations per bucket (upper bounds in seconds), their count and sum."""

    def __init__(self, bounds: Sequence[float] = DEFAULT_BUCKETS) -> None:
        self.bounds = tuple(bounds)
        self._counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.count += 1
        self.sum += seconds

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations ≤ it)`` per bucket, ending with ``(inf, count)``."""
        total, result = 0, []
        for bound, count in zip((*self.bounds, math.inf), self._counts):
            total += count
            result.append((bound, total))
        return result
