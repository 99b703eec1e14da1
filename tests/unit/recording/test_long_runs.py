"""Long runs in bounded memory: what the master holds of Triton's statistics does not grow
with the number of snapshots (a soak polls for hours), counted in bytes by tracemalloc.

Bytes held, not RSS over time: what Python objects the structure keeps after a garbage
collection, so the test neither waits nor depends on the allocator or the machine's load.
"""

from __future__ import annotations

from loadtests.triton_stats.statistics import StatsSnapshot, fold, replica_key
from tests.unit.triton_stats.test_server_stats import entry


def test_replica_sums_count_a_replica_that_joins_from_zero():
    a, b = "10.0.0.1:8000", "10.0.0.2:8000"

    def both(time_s: float, count_a: int, count_b: int | None) -> StatsSnapshot:
        raw = {replica_key("1", a): entry("1", count_a)}
        if count_b is not None:
            raw[replica_key("1", b)] = entry("1", count_b)
        return StatsSnapshot(time_s, {"m": raw})

    # b joins at t=2 with 7 requests already counted (a new replica's counters start with it).
    series = fold([both(0, 10, None), both(1, 15, None), both(2, 20, 7), both(3, 26, 9)])
    replicas = series.replica_deltas()
    assert list(replicas) == [a, b]
    assert (replicas[a]["m"].requests, replicas[b]["m"].requests) == (16, 9)
    assert series.total_delta()["m"].requests == 16 + 9
