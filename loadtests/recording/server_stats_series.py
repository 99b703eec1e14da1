"""A run's statistics snapshots, folded one at a time: what a run keeps of them in memory.

A snapshot is 5-14 KB of Python objects per model (3 KB of JSON), and a soak polls for
hours, so a run does not hold its snapshots: each is folded into the running sums below the
moment it arrives, streamed to the run directory (server_stats_file.py), and dropped. What is
kept is the same size after ten snapshots as after a hundred thousand: the last snapshot (the
next delta's start, and a replica's carried-forward entries), the counters summed interval by
interval per model and per replica, the last interval's deltas (the live views), and the
restarts (one record per counter reset, not per snapshot).

The sums are the ones server_stats.py describes: a version or replica that first appears
counts from zero, a counter that went down counts from zero (a restart), and the run's total
is the intervals' sum, so a Triton restart mid-run adds both lifetimes.

Example:
    series = SnapshotSeries()
    for snapshot in snapshots:
        interval = series.add(snapshot)  # (start_s, end_s, {model: ModelDelta}), None for the first
    series.total_delta()["resnet50"].requests  # 1200
"""

from __future__ import annotations

from typing import Any

from loadtests.recording.server_stats import (
    REPLICA_SEPARATOR,
    ModelDelta,
    StatsSnapshot,
    counter_delta,
    delta_of_counters,
    model_restarted,
    replica_view,
)

Counters = dict[str, int]
Interval = tuple[float, float, dict[str, ModelDelta]]


def _add_into(totals: dict[str, Counters], model: str, counters: Counters) -> None:
    model_totals = totals.setdefault(model, {})
    for key, value in counters.items():
        model_totals[key] = model_totals.get(key, 0) + value


class SnapshotSeries:
    """The running sums of one run's snapshots (oldest first), in memory that does not grow
    with the number of snapshots (only with models, replicas and restarts)."""

    def __init__(self) -> None:
        self.first: StatsSnapshot | None = None
        self.last: StatsSnapshot | None = None
        self.count = 0
        self.last_interval: Interval | None = None
        # [{"after_s", "before_s", "models"}]: where counters went down (Triton or a model restarted).
        self.restarts: list[dict[str, Any]] = []
        self._totals: dict[str, Counters] = {}
        # Per replica address (in the order first seen), its own counters per model.
        self._replica_totals: dict[str, dict[str, Counters]] = {}

    def add(self, snapshot: StatsSnapshot) -> Interval | None:
        """Folds the next snapshot in; returns the interval it closes (None for the first)."""
        before, self.last = self.last, snapshot
        self.count += 1
        self._note_replicas(snapshot)
        if before is None:
            self.first = snapshot
            self._totals = {model: {} for model in snapshot.models}
            return None
        deltas = {}
        for model, raw in snapshot.models.items():
            counters = counter_delta(before.models.get(model), raw)
            _add_into(self._totals, model, counters)
            deltas[model] = delta_of_counters(counters)
        for address, totals in self._replica_totals.items():
            earlier, later = replica_view(before, address), replica_view(snapshot, address)
            for model, raw in later.models.items():
                _add_into(totals, model, counter_delta(earlier.models.get(model), raw))
        restarted = sorted(m for m, raw in snapshot.models.items() if model_restarted(before.models.get(m), raw))
        if restarted:
            self.restarts.append({"after_s": before.time_s, "before_s": snapshot.time_s, "models": restarted})
        self.last_interval = (before.time_s, snapshot.time_s, deltas)
        return self.last_interval

    def _note_replicas(self, snapshot: StatsSnapshot) -> None:
        for raw in snapshot.models.values():
            for key in raw:
                if REPLICA_SEPARATOR in key:
                    address = key.partition(REPLICA_SEPARATOR)[2]
                    if address not in self._replica_totals:
                        # Every model of the run's first snapshot, as the run's own total has.
                        first = self.first or snapshot
                        self._replica_totals[address] = {model: {} for model in first.models}

    def total_delta(self) -> dict[str, ModelDelta]:
        """First snapshot to last, summed interval by interval (restart-safe). {} without snapshots.

        What the old server did between its last snapshot and a restart is not known (see restarts).
        """
        return {model: delta_of_counters(counters) for model, counters in self._totals.items()}

    def replica_deltas(self) -> dict[str, dict[str, ModelDelta]]:
        """{address: {model: ModelDelta}} over the whole run, per replica ({} for one server)."""
        return {
            address: {model: delta_of_counters(counters) for model, counters in totals.items()}
            for address, totals in self._replica_totals.items()
        }


def fold(snapshots: list[StatsSnapshot]) -> SnapshotSeries:
    """A list of snapshots (oldest first) folded: for tests and one-off sums over a saved run."""
    series = SnapshotSeries()
    for snapshot in snapshots:
        series.add(snapshot)
    return series
