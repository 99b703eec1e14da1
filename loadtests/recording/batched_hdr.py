"""Record many latencies into an HdrHistogram in one numpy pass, exactly as one by one.

hdrh's `record_value` is Python: a bucket index computed through `bin()`, min and max, per
value (with the suite's rounding and clamping, about 2 µs a request on the request path,
twice in open loop). A process's recorder keeps each request's latency in a list instead
and adds the list here when its window is drained (or the list is long): the same bucket
arithmetic as hdrh's `_counts_index_for`, vectorised, so the counts, total, minimum and
maximum come out identical to `record_value(clamp_us(v))` for every v (tests/unit/recording/test_recording.py).

    record_values(histogram, [250.4, 251.0, 1830.7])
    counts_below(histogram, [1000, 2000])  # [2, 3]: the recorded values surely below each bound
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hdrh.histogram import HdrHistogram

from loadtests.run_format.hdr import HIGHEST_US, LOWEST_US


def record_values(histogram: HdrHistogram, latencies_us: Sequence[float]) -> None:
    """Add latencies (µs, floats) to `histogram`, rounded half to even and clamped to the
    suite's range as `histograms.clamp_us` does."""
    if not len(latencies_us):
        return
    # np.rint rounds half to even, as Python's round(); clipping after it, as clamp_us does.
    values = np.clip(np.rint(np.asarray(latencies_us, dtype=np.float64)), LOWEST_US, HIGHEST_US).astype(np.int64)
    index = _indices(histogram, values)
    low, high = int(index.min()), int(index.max())
    counts = np.ctypeslib.as_array(histogram.counts)
    counts[low : high + 1] += np.bincount(index - low, minlength=high - low + 1).astype(counts.dtype)
    histogram.total_count += len(values)
    histogram.min_value = min(histogram.min_value, int(values.min()))
    histogram.max_value = max(histogram.max_value, int(values.max()))


def counts_below(histogram: HdrHistogram, bounds_us: Sequence[float]) -> list[int]:
    """Per bound, the recorded values surely below it: those in buckets before the bound's own
    (whose values all lie below the bound's bucket), without iterating the histogram in Python."""
    bounds = np.clip(np.asarray(bounds_us, dtype=np.float64), LOWEST_US, HIGHEST_US).astype(np.int64)
    cumulative = np.cumsum(np.ctypeslib.as_array(histogram.counts), dtype=np.int64)
    return [int(cumulative[index - 1]) if index > 0 else 0 for index in _indices(histogram, bounds)]


def _indices(histogram: HdrHistogram, values: np.ndarray) -> np.ndarray:
    """hdrh's `_counts_index_for`, vectorised: bucket = bit_length(v | sub_bucket_mask) -
    unit_magnitude - (half_count_magnitude + 1); frexp's exponent is the bit length of an
    integer below 2**53."""
    bit_length = np.frexp((values | histogram.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
    bucket = bit_length - histogram.unit_magnitude - (histogram.sub_bucket_half_count_magnitude + 1)
    sub_bucket = values >> (bucket + histogram.unit_magnitude)
    return ((bucket + 1) << histogram.sub_bucket_half_count_magnitude) + sub_bucket - histogram.sub_bucket_half_count


__all__ = ("counts_below", "record_values")
