# LatencyHistogram.observe (runtime/latency.py) for compiled callers that read its bounds once: a
# histogram's bounds and bucket list are fixed when it is made.
from libcpp.vector cimport vector


cdef inline int observe_latency(object histogram, list counts, const vector[double]& bounds, double seconds) except -1:
    cdef size_t low = 0, high = bounds.size(), middle
    while low < high:  # bisect_left
        middle = (low + high) // 2
        if bounds[middle] < seconds:
            low = middle + 1
        else:
            high = middle
    counts[low] += 1
    histogram.count += 1
    histogram.sum += seconds
    return 0
