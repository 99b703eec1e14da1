"""Reading the run's HdrHistogram interval logs (hdr/<endpoint>.hlog) in bounded memory.

The logs are the standard format 1.2 (one interval per window, values in µs). To get exact
percentiles over a stretch of the run (a load-shape step), the intervals inside it are
decoded one at a time and added into one accumulator per stretch: an hour of 1-s windows
is 3,600 intervals, and holding them all decoded would take gigabytes.

    logs = read_logs(run_dir / "hdr")              # {endpoint name: HlogFile}
    merged = logs["identity [grpc]"].merge([(0.0, 30.0), (30.0, 60.0)], run_start_epoch)
    merged[0].get_value_at_percentile(99)          # p99 of the first 30 s, µs
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from loadtests.run_format.files import HLOG_SUFFIX

# The one histogram range of the suite, for the recorder (loadtests/recording/histograms.py)
# and the reports alike: 1 µs to 10 min, 3 significant digits.
LOWEST_US = 1
HIGHEST_US = 10 * 60 * 1_000_000
SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
LATENCY_KEYS = ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")

_NAME = re.compile(r"^#\[Latency of (?P<name>.+?) in microseconds")
# Open-loop runs also log the latency from the actual send: hdr/<endpoint>.uncorrected.hlog.
UNCORRECTED = "uncorrected"
# A streamed endpoint (decoupled model) also logs its time to first response and its gaps between
# responses: hdr/<endpoint>.first_response.hlog, hdr/<endpoint>.gap.hlog (summary.json's
# stream.first_response_us and stream.gap_us; the variant is the key without "_us").
FIRST_RESPONSE = "first_response"
GAP = "gap"
VARIANTS = (UNCORRECTED, FIRST_RESPONSE, GAP)
_BASE = re.compile(r"^#\[(?:BaseTime|StartTime): (?P<t>[0-9.]+)")


class HlogError(Exception):
    """An interval log that cannot be read."""


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


@dataclass(frozen=True)
class HlogFile:
    """One interval log: the endpoint it records and the Unix time its timestamps count from."""

    path: Path
    endpoint: str
    base_epoch: float

    def intervals(self) -> Iterator[tuple[float, float, str]]:
        """(start_s since base, length_s, encoded histogram) per interval, read lazily."""
        with open(self.path) as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip() or line.startswith(("#", '"')):
                    continue
                fields = line.rstrip("\n").split(",")
                if fields[0].startswith("Tag="):  # format 1.3 may tag an interval
                    fields = fields[1:]
                try:
                    yield float(fields[0]), float(fields[1]), fields[3]
                except (IndexError, ValueError):
                    raise HlogError(f"{self.path}:{number}: not an interval line") from None

    def merge(self, segments: list[tuple[float, float]], run_start_epoch: float) -> list[HdrHistogram]:
        """One merged histogram per [start_s, end_s) segment on the run's clock (timeseries.csv's
        time_s). An interval belongs to the segment holding its midpoint, the rule the time
        series windows follow too, so counts agree with timeseries.csv."""
        merged = [new_histogram() for _ in segments]
        offset = self.base_epoch - run_start_epoch
        for start, length, encoded in self.intervals():
            middle = offset + start + length / 2
            for index, (seg_start, seg_end) in enumerate(segments):
                if seg_start <= middle < seg_end:
                    merged[index].decode_and_add(encoded)
                    break
        return merged


def read_header(path: Path) -> HlogFile:
    endpoint, base = path.stem, None
    with open(path) as lines:
        for line in lines:
            if not line.startswith("#"):
                break
            if match := _NAME.match(line):
                endpoint = match["name"]
            elif (match := _BASE.match(line)) and (base is None or line.startswith("#[BaseTime")):
                base = float(match["t"])
    if base is None:
        raise HlogError(f"{path}: no StartTime/BaseTime header")
    return HlogFile(path, endpoint, base)


def read_logs(hdr_dir: Path, variant: str = "") -> dict[str, HlogFile]:
    """Every hdr/*.hlog (or hdr/*.<variant>.hlog) by the endpoint named in its header; {} when
    there is no hdr/."""
    if not hdr_dir.is_dir():
        return {}
    logs = {}
    for path in sorted(hdr_dir.glob(f"*.{variant}{HLOG_SUFFIX}" if variant else f"*{HLOG_SUFFIX}")):
        if not variant and path.name.endswith(tuple(f".{other}{HLOG_SUFFIX}" for other in VARIANTS)):
            continue
        log = read_header(path)
        logs.setdefault(log.endpoint, log)
    return logs


def summarise_us(h: HdrHistogram) -> dict[str, float] | None:
    """summary.json's latency keys (p50/p90/p95/p99/p99.9/max/mean, µs) of a histogram; None if empty.

    The same values as hdrh's get_value_at_percentile / get_max_value / get_mean_value,
    computed over the non-empty buckets with numpy: hdrh walks all ~30,000 buckets in
    Python once per percentile (26 ms for this summary), which stalled the recorder's
    gevent loop every window and sent open-loop requests late. The buckets' values and
    midpoints are hdrh's own index arithmetic, vectorised (a Python loop over the non-empty
    buckets still took 3.7 ms per 2,000-request window, twice per open-loop window).
    """
    total = h.get_total_count()
    if total == 0:
        return None
    counts = np.ctypeslib.as_array(h.counts, shape=(h.counts_len,))
    indexes = np.flatnonzero(counts)
    nonzero = counts[indexes].astype(np.int64)
    cumulative = np.cumsum(nonzero)
    lowest, size = bucket_values(h, indexes)
    summary = {}
    for percentile in PERCENTILES:
        at = min(int(np.searchsorted(cumulative, h.get_target_count_at_percentile(percentile))), len(indexes) - 1)
        summary[f"p{percentile:g}"] = float(lowest[at] + size[at] - 1)  # hdrh's highest equivalent value
    summary["max"] = float(h.get_max_value())
    # hdrh's mean: every count at its bucket's midpoint, summed exactly (Python ints past int64's reach).
    midpoints = lowest + (size >> 1)
    exact = total * int(midpoints[-1]) >= 2**63
    weighted = int((nonzero.astype(object) * midpoints.astype(object)).sum()) if exact else int(nonzero @ midpoints)
    summary["mean"] = round(weighted / total, 3)
    return summary


def bucket_values(h: HdrHistogram, indexes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each counts index's lowest value and the size of its range of equivalent values, as hdrh's
    get_value_from_index and _hdr_size_of_equiv_value_range compute them one at a time."""
    bucket = (indexes >> h.sub_bucket_half_count_magnitude) - 1
    sub_bucket = (indexes & (h.sub_bucket_half_count - 1)) + h.sub_bucket_half_count
    first = bucket < 0
    sub_bucket = np.where(first, sub_bucket - h.sub_bucket_half_count, sub_bucket)
    bucket = np.where(first, 0, bucket)
    lowest = sub_bucket.astype(np.int64) << (bucket + h.unit_magnitude)
    # The size comes from the value's own bucket (hdrh recomputes it from the value).
    bit_length = np.frexp((lowest | h.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
    value_bucket = bit_length - h.unit_magnitude - (h.sub_bucket_half_count_magnitude + 1)
    value_sub_bucket = lowest >> (value_bucket + h.unit_magnitude)
    adjusted = value_bucket + (value_sub_bucket >= h.sub_bucket_count)
    return lowest, np.left_shift(1, h.unit_magnitude + adjusted, dtype=np.int64)


def zero_summary() -> dict[str, float]:
    """The latency keys of an endpoint without a successful request."""
    return dict.fromkeys(LATENCY_KEYS, 0.0)
