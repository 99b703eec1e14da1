"""Add an encoded HdrHistogram into histograms without building a histogram per message.

The master merges every window of every worker report into two histograms (the window's
and the run's total). hdrh's own path, `HdrHistogram.decode(...)` then `add(...)`, builds a
full histogram per message: its Python constructor and a fresh 170-KB counts array (which
the master maps and unmaps, recording/memory.py) cost about 100 µs before any count is
added, and was the largest share of a busy master's CPU (bench/master_scale.py, py-spy).

Here the compressed counts are decoded once into one reused buffer, added into each target
over the decoded index range only, and the buffer's range is zeroed again. Same counts,
total, min and max as hdrh's decode and add (tests/recording/test_recording.py checks it), except that
an empty histogram leaves the minimum alone (hdrh's add sets it to 0); an encoded histogram
with another range than the suite's takes hdrh's path.

    adder = EncodedAdder()  # one per merging aggregator: it owns the reused buffer
    adder.add(encoded_text, [window.histogram, total.histogram])
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from hdrh.codec import HdrHistogramEncoder, payload_header_size
from hdrh.histogram import HdrHistogram
from pyhdrh import add_array, decode  # hdrh's C helpers (the package's own decode and add use them)

from loadtests.run_format.hdr import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS, new_histogram

WORD_BYTES = 8  # the suite's histograms count in 64-bit words (hdrh's default)


class EncodedAdder:
    """Adds encoded histograms into histograms through one reused, always-zero buffer."""

    def __init__(self) -> None:
        self.scratch = new_histogram()  # only its counts array is used, left all zero after each add

    def add(self, encoded: str, targets: Sequence[HdrHistogram]) -> None:
        """Add the histogram `encoded` (hdrh's base64 text) into every target (the suite's range)."""
        add_encoded(encoded, targets, self.scratch)


def add_encoded(encoded: str, targets: Sequence[HdrHistogram], scratch: HdrHistogram) -> None:
    """Add the histogram `encoded` into every target, decoding it into `scratch` (all zero before
    and after)."""
    payload = HdrHistogramEncoder.decode(encoded.encode("ascii"))  # base64, zlib, header checks
    header = payload.payload
    if (header.lowest_trackable_value, header.highest_trackable_value, header.significant_figures) != (
        LOWEST_US,
        HIGHEST_US,
        SIGNIFICANT_DIGITS,
    ) or any(target.counts_len != scratch.counts_len for target in targets):
        other = HdrHistogram.decode(encoded.encode("ascii"))
        for target in targets:
            target.add(other)  # another range: hdrh re-records value by value
        return
    base = ctypes.addressof(scratch.counts)
    decoded = decode(payload._data, payload_header_size, base, scratch.counts_len, WORD_BYTES)
    total = decoded["total"]
    if not total:
        return
    low, high = decoded["min_nonzero_index"], decoded["max_nonzero_index"]
    offset, length = low * WORD_BYTES, high - low + 1
    # What hdrh's decoded histogram would answer for get_min_value() and get_max_value().
    min_value = 0 if low == 0 else scratch.get_lowest_equivalent_value(scratch.get_value_from_index(low))
    max_value = scratch.get_highest_equivalent_value(
        scratch.get_highest_equivalent_value(scratch.get_value_from_index(high))
    )
    try:
        for target in targets:
            # The same steps, in the same order, as HdrHistogram.add.
            add_array(ctypes.addressof(target.counts) + offset, base + offset, length, WORD_BYTES)
            target.total_count += total
            target.max_value = max(target.max_value, max_value)
            target.min_value = min(target.get_min_value(), min_value)
    finally:
        ctypes.memset(base + offset, 0, length * WORD_BYTES)
