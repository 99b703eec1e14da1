"""What made the slow requests slow: the tail's time, part by part, against the median request's.

Each traced request (a row of traces.csv) splits its client total into parts that add up to
it exactly: `receive` (Triton's receive start to the queue), `queue`, `compute_input`,
`infer`, `output`, `send` (compute end to the response sent) and `network_client` (the client
total minus Triton's receive-to-send: the network and the client). A band is a set of requests
by client total: the median band (p40 to p60), above p95 and above p99 (the joined requests'
own percentiles, at HDR's ranks). A band's share of a part is the part's time over the band's
total time.

    block = attribute(rows)   # rows: dicts with "client_us" and each part's "<part>_us"
    block["sentence"]  # "requests above p99 spent 78 % of their time in queue (median request: 31 %)"

The cause is named only when it stands out: the band's mean total is at least
`CAUSE_MIN_RATIO` times the median band's, and one part holds most of the extra time over the
median request in at least `CAUSE_MIN_SHARE` of the band's requests (`cause_requests` of them).
Shared by summary.json (written by the run) and analysis/ (report, diagnosis).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

PARTS = ("receive", "queue", "compute_input", "infer", "output", "send", "network_client")
PART_LABELS = {
    "receive": "Triton receiving",
    "queue": "queue",
    "compute_input": "compute input",
    "infer": "compute infer",
    "output": "compute output",
    "send": "Triton sending",
    "network_client": "the network and the client",
}
MEDIAN_BAND = (40.0, 60.0)
TAIL_BANDS = (("above_p99", 99.0), ("above_p95", 95.0))
CAUSE_MIN_RATIO = 2.0
CAUSE_MIN_SHARE = 0.75  # a mixed tail (CPU contention: queue, infer, client at once) names nothing
MIN_BAND_REQUESTS = 3


def nearest_rank(sorted_values: np.ndarray, percentile: float) -> float:
    """The value at HDR's rank for `percentile` (hdrh's get_target_count_at_percentile: the
    count rounded half up, at least 1), exact: the run's HDR percentiles of the same requests
    fall in this value's bucket."""
    rank = max(1, int(percentile * len(sorted_values) / 100.0 + 0.5))
    return float(sorted_values[rank - 1])


def _band(rows: list[dict], keep: np.ndarray) -> dict:
    chosen = [row for row, k in zip(rows, keep, strict=True) if k]
    total = sum(row["client_us"] for row in chosen)
    means = {part: sum(row[f"{part}_us"] for row in chosen) / len(chosen) if chosen else 0.0 for part in PARTS}
    return {
        "requests": len(chosen),
        "mean_us": total / len(chosen) if chosen else 0.0,
        "part_mean_us": {part: round(value, 1) for part, value in means.items()},
        "share": {part: round(means[part] * len(chosen) / total, 4) if total > 0 else 0.0 for part in PARTS},
    }


def attribute(rows: list[dict]) -> dict:
    """One endpoint's (or step's) joined requests -> its bands, the cause and the sentence."""
    totals = np.sort(np.array([row["client_us"] for row in rows], dtype=float))
    values = np.array([row["client_us"] for row in rows], dtype=float)
    if not len(rows):
        return {"requests": 0, "bands": {}, "cause": None, "sentence": "no joined requests"}
    low, high = (nearest_rank(totals, p) for p in MEDIAN_BAND)
    bands = {"median": _band(rows, (values >= low) & (values <= high))}
    thresholds, members = {}, {}
    for name, percentile in TAIL_BANDS:
        thresholds[name] = threshold = nearest_rank(totals, percentile)
        members[name] = [row for row, value in zip(rows, values, strict=True) if value > threshold]
        bands[name] = _band(rows, values > threshold)
    block = {
        "requests": len(rows),
        "p50_us": nearest_rank(totals, 50.0),
        "p95_us": thresholds["above_p95"],
        "p99_us": thresholds["above_p99"],
        "bands": bands,
    }
    block.update(_cause(bands, members))
    return block


def _dominant(rows: list[dict], median: dict) -> Counter:
    """Per request of a band, the part with the most time over the median request's: counted."""
    counts: Counter = Counter()
    for row in rows:
        counts[max(PARTS, key=lambda part: row[f"{part}_us"] - median["part_mean_us"][part])] += 1
    return counts


def _cause(bands: dict, members: dict) -> dict:
    """The part that made the tail slow, from the highest tail band with enough requests: the band
    is at least CAUSE_MIN_RATIO times slower than the median request and one part holds most of
    the extra time in at least CAUSE_MIN_SHARE of its requests (a few outliers name nothing)."""
    median = bands["median"]
    for name, _percentile in TAIL_BANDS:
        band = bands[name]
        if band["requests"] < MIN_BAND_REQUESTS:
            continue
        label = name.replace("above_", "above ")
        dominant = _dominant(members[name], median)
        part, count = dominant.most_common(1)[0]
        slow_enough = band["mean_us"] >= CAUSE_MIN_RATIO * median["mean_us"]
        stands_out = slow_enough and count >= CAUSE_MIN_SHARE * band["requests"]
        said = part if stands_out else max(PARTS, key=band["share"].get)
        sentence = (
            f"requests {label} spent {100 * band['share'][said]:.0f} % of their time in {PART_LABELS[said]} "
            f"(median request: {100 * median['share'][said]:.0f} %)"
        )
        if not stands_out:
            sentence += "; no single part stands out"
        return {
            "band": name,
            "cause": part if stands_out else None,
            "cause_requests": count,
            "sentence": sentence,
        }
    return {"band": None, "cause": None, "sentence": f"fewer than {MIN_BAND_REQUESTS} joined requests above p95"}
