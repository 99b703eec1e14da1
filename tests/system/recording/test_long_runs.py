"""Long runs in bounded memory: what the master holds of Triton's statistics does not grow with the
number of snapshots (a soak polls for hours), counted in bytes by tracemalloc.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/recording/test_long_runs.py.
"""

from __future__ import annotations

import gc
import json
import tracemalloc

from loadtests.triton_stats.poller import ServerStatsPoller
from loadtests.triton_stats.statistics import StatsSnapshot, compute_delta
from tests.helpers import http_target
from tests.system.triton_stats.test_server_stats import send

MODELS = ["identity", "sleep", "sleep_batch"]
WARM_UP = 20  # connection pools, interned keys, first-use caches: allocated once, then reused
MEASURED = 200
# Growth allowed per snapshot after the bound, as a share of what one snapshot weighs: a list
# that kept every snapshot grows by one snapshot each time (100 %).
MAX_GROWTH_SHARE = 0.02


def traced_bytes() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_memory_held_per_snapshot_does_not_grow_with_the_run(triton, tmp_path):
    poller = ServerStatsPoller(http_target(triton.http_address), MODELS, interval_s=3600, stream_to=tmp_path)
    poller.start()  # the first snapshot; the next periodic one is an hour away
    try:
        send(triton.http_address, "identity", 3)  # counters that differ from zero
        for _ in range(WARM_UP):
            poller.snapshot_now()
        tracemalloc.start()
        try:
            start = traced_bytes()
            poller.snapshot_now()
            one_snapshot = traced_bytes() - start  # the one the poller holds now: its last
            for _ in range(MEASURED):
                assert poller.snapshot_now() is not None
            grown = traced_bytes() - start - one_snapshot
        finally:
            tracemalloc.stop()
    finally:
        poller.stop()
        poller.close()
    assert one_snapshot > 1000, one_snapshot  # three models' entries: kilobytes, or nothing was measured
    per_snapshot = grown / MEASURED
    assert per_snapshot < MAX_GROWTH_SHARE * one_snapshot, (
        f"{per_snapshot:.0f} bytes held per snapshot, {one_snapshot} bytes in one snapshot"
    )
    # Nothing was lost on the way: every snapshot is on disk, and the run's total is Triton's.
    lines = (tmp_path / "server_snapshots.jsonl").read_text().splitlines()
    assert len(lines) == poller.series.count == 1 + WARM_UP + 1 + MEASURED + 1  # start ... stop
    first, last = (StatsSnapshot(**json.loads(line)) for line in (lines[0], lines[-1]))
    assert poller.total_delta()["identity"].requests == compute_delta(first, last)["identity"].requests == 3
