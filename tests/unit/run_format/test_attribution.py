"""The tail's parts against the median request's, and when a cause is named."""

from __future__ import annotations

import numpy as np
import pytest

from loadtests.run_format.attribution import PARTS, attribute, nearest_rank
from loadtests.run_format.hdr import new_histogram, summarise_us


def row(client_us: float, **parts: float) -> dict:
    values = {f"{part}_us": 0.0 for part in PARTS}
    values.update({f"{part}_us": value for part, value in parts.items()})
    values["network_client_us"] = client_us - sum(parts.values())
    return {"client_us": client_us, **values}


def test_a_tail_made_of_queueing_is_named_with_the_median_requests_share():
    rng = np.random.default_rng(7)
    rows = [row(1000.0 + rng.uniform(0, 50), queue=300.0, infer=500.0) for _ in range(380)]
    rows += [row(9000.0 + rng.uniform(0, 50), queue=8300.0, infer=500.0) for _ in range(20)]
    block = attribute(rows)
    assert block["cause"] == "queue" and block["band"] == "above_p99"
    tail, median = block["bands"]["above_p99"], block["bands"]["median"]
    assert tail["share"]["queue"] == pytest.approx(8300 / 9025, abs=0.01)
    assert median["share"]["queue"] == pytest.approx(300 / 1025, abs=0.01)
    expected = (
        f"requests above p99 spent {100 * tail['share']['queue']:.0f} % of their time in queue (median request: 29 %)"
    )
    assert block["sentence"] == expected


def test_a_tail_no_slower_than_twice_the_median_names_no_cause():
    rng = np.random.default_rng(8)
    rows = [row(1000.0 + rng.uniform(0, 800), queue=300.0, infer=500.0) for _ in range(400)]
    block = attribute(rows)
    assert block["cause"] is None
    assert block["sentence"].endswith("no single part stands out")


def test_too_few_requests_for_a_tail_band_says_so():
    block = attribute([row(1000.0, infer=900.0), row(2000.0, infer=1900.0)])
    assert block["cause"] is None and "fewer than" in block["sentence"]


def test_the_bands_thresholds_fall_in_the_hdr_percentiles_buckets():
    values = np.random.default_rng(9).lognormal(7, 1, 997)
    histogram = new_histogram()
    for value in values:
        histogram.record_value(int(value))
    hdr = summarise_us(histogram)
    ordered = np.sort(values.astype(int).astype(float))
    for percentile in (50.0, 95.0, 99.0):
        exact = nearest_rank(ordered, percentile)
        top = hdr[f"p{percentile:g}"]
        assert histogram.get_lowest_equivalent_value(int(top)) <= exact <= top
