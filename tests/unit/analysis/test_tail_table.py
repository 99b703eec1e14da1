"""The report's band table of a --trace-sample run (analysis/tail.py): a band no request fell in
is said to be empty, not shown as a request of 0 ms spending 0 % everywhere."""

from __future__ import annotations

from analysis.tail import band_rows
from loadtests.run_format.attribution import PARTS, attribute


def _row(total_us: float) -> dict:
    # Queue holds all but 1 µs of each part's share: the parts add up to the client total.
    parts = dict.fromkeys((f"{part}_us" for part in PARTS), 1.0)
    parts["queue_us"] = total_us - (len(PARTS) - 1)
    return {"client_us": total_us, **parts}


def test_an_empty_band_says_so_and_the_others_keep_their_numbers():
    # 36 requests: above p99 is above the 36th smallest (HDR's rank), so no request is in it.
    block = attribute([_row(50_000 + 100 * i) for i in range(36)])
    assert block["bands"]["above_p99"]["requests"] == 0
    rows = {row[0]: row for row in band_rows(block)}
    empty = rows["above p99"]
    assert empty[1:3] == ["0", "no request"] and set(empty[3:]) == {""}, empty
    median = rows["median (p40-p60)"]
    assert int(median[1]) == block["bands"]["median"]["requests"] > 0
    assert float(median[2]) == round(block["bands"]["median"]["mean_us"] / 1000, 3)
