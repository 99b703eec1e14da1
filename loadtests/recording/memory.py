"""Give freed histogram memory back to the operating system.

Every worker report carries HDR histograms; the master decodes each into a counts array of
up to 170 KB (21,504 counts of 8 bytes for 1 µs to 10 min at 3 significant digits; tracemalloc saw
77 KB on average), merges it and drops it. glibc serves
allocations under its mmap threshold (128 KB, then raised dynamically) from the heap, where
freed blocks are reused but the heap rarely shrinks: measured in a 30-minute soak at 500
requests/s with 2 workers, the master's RSS grew 113 MB while tracemalloc saw under 50 MB of
live Python objects. Lowering the threshold below one counts array makes each of them its own
mapping, returned to the system when freed (a few µs of mmap/munmap per histogram, a few
histograms per worker report). The histograms are freed as soon as they are dropped
(histograms.release_histogram: hdrh's reference cycle would keep them until a full garbage
collection, which was most of that growth). The master only: in a process that sends requests the same
threshold would map and fault in every large request or response buffer (a 600 KB ResNet
image, gRPC's copies of it) on every request.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # mallopt parameter number (glibc malloc.h)
HISTOGRAM_MMAP_THRESHOLD_BYTES = 64 * 1024


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
