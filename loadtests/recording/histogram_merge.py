"""The master's merge of workers' histograms: each encoded HdrHistogram added without building a
histogram per message, and the memory of the histograms it drops given back to the system.

The master merges every window of every worker report into two histograms (the window's
and the run's total). hdrh's own path, `HdrHistogram.decode(...)` then `add(...)`, builds a
full histogram per message: its Python constructor and a fresh 170-KB counts array (which
the master maps and unmaps, below) cost about 100 µs before any count is
added, and was the largest share of a busy master's CPU (bench/master_scale.py, py-spy).

Here the compressed counts are decoded once into one reused buffer, added into each target
over the decoded index range only, and the buffer's range is zeroed again. Same counts,
total, min and max as hdrh's decode and add (tests/unit/recording/test_recording.py checks it), except that
an empty histogram leaves the minimum alone (hdrh's add sets it to 0); an encoded histogram
with another range than the suite's takes hdrh's path.

    adder = EncodedAdder()  # one per merging aggregator: it owns the reused buffer
    adder.add(encoded_text, [window.histogram, total.histogram])

Freed histogram memory back to the operating system (`return_freed_histograms_to_os`): every
worker report carries HDR histograms; the master decodes each into a counts array of up to 170 KB
(21,504 counts of 8 bytes for 1 µs to 10 min at 3 significant digits; tracemalloc saw 77 KB on
average), merges it and drops it. glibc serves allocations under its mmap threshold (128 KB,
then raised dynamically) from the heap, where freed blocks are reused but the heap rarely
shrinks: measured in a 30-minute soak at 500 requests/s with 2 workers, the master's RSS grew
113 MB while tracemalloc saw under 50 MB of live Python objects. Lowering the threshold below
one counts array makes each of them its own mapping, returned to the system when freed (a few
µs of mmap/munmap per histogram, a few histograms per worker report). The histograms are freed
as soon as they are dropped (histograms.release_histogram: hdrh's reference cycle would keep
them until a full garbage collection, which was most of that growth). The master only: in a
process that sends requests the same threshold would map and fault in every large request or
response buffer (a 600 KB ResNet image, gRPC's copies of it) on every request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence

from hdrh.codec import HdrHistogramEncoder, payload_header_size
from hdrh.histogram import HdrHistogram
from pyhdrh import add_array, decode  # hdrh's C helpers (the package's own decode and add use them)

from loadtests.run_format.hdr import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS, new_histogram

WORD_BYTES = 8  # the suite's histograms count in 64-bit words (hdrh's default)
M_MMAP_THRESHOLD = -3  # mallopt parameter number (glibc malloc.h)
HISTOGRAM_MMAP_THRESHOLD_BYTES = 64 * 1024


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


def return_freed_histograms_to_os() -> bool:
    """Set glibc's mmap threshold; False where there is no glibc (the call is then a no-op)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, HISTOGRAM_MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
