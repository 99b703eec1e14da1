"""Record many latencies into an HdrHistogram in one numpy pass, exactly as one by one.

hdrh's `record_value` is Python: a bucket index computed through `bin()`, min and max, per
value (with the suite's rounding and clamping, about 2 µs a request on the request path,
twice in open loop). A process's recorder keeps each request's latency in a list instead
and adds the list here when its window is drained (or the list is long): the same bucket
arithmetic as hdrh's `_counts_index_for`, vectorised, so the counts, total, minimum and
maximum come out identical to `record_value(clamp_us(v))` for every v (tests/unit/recording/test_recording.py).

    record_values(histogram, [250.4, 251.0, 1830.7])
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
    # hdrh: bucket = bit_length(v | sub_bucket_mask) - unit_magnitude - (half_count_magnitude + 1);
    # frexp's exponent is the bit length of an integer below 2**53.
    bit_length = np.frexp((values | histogram.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
    bucket = bit_length - histogram.unit_magnitude - (histogram.sub_bucket_half_count_magnitude + 1)
    sub_bucket = values >> (bucket + histogram.unit_magnitude)
    index = ((bucket + 1) << histogram.sub_bucket_half_count_magnitude) + sub_bucket - histogram.sub_bucket_half_count
    low, high = int(index.min()), int(index.max())
    counts = np.ctypeslib.as_array(histogram.counts)
    counts[low : high + 1] += np.bincount(index - low, minlength=high - low + 1).astype(counts.dtype)
    histogram.total_count += len(values)
    histogram.min_value = min(histogram.min_value, int(values.min()))
    histogram.max_value = max(histogram.max_value, int(values.max()))


__all__ = ("record_values",)
