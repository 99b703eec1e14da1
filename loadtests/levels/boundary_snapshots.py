"""Triton's statistics at every window boundary: a greenlet on the master (or single process).

A sweep level's server-side numbers are the delta between the snapshots at its first
trial's start and its last trial's end. The run hands over how to take a snapshot and how to
subtract two (`RunStarted.snapshot_now`, `RunStarted.server_delta`); when a boundary's
snapshot failed (Triton did not answer in time), the nearest boundary that has one stands in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import gevent


class BoundarySnapshots:
    """Snapshots taken at each multiple of `window_s` (Unix time), the latest KEEP of them."""

    KEEP = 64

    def __init__(
        self,
        snapshot_now: Callable[[], Any],
        server_delta: Callable[[Any, Any], dict[str, Any]],
        window_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.snapshot_now = snapshot_now
        self.server_delta = server_delta
        self.window_s = window_s
        self.clock = clock
        self.by_boundary: dict[int, Any] = {}
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)

    def _run(self) -> None:
        while True:
            key = math.floor(self.clock() / self.window_s) + 1
            gevent.sleep(max(0.0, key * self.window_s - self.clock()))
            self.take(key)

    def take(self, key: int) -> None:
        """The snapshot of boundary `key` (time key * window_s), if Triton answered."""
        snapshot = self.snapshot_now()
        if snapshot is not None:
            self.by_boundary[key] = snapshot
        for old in sorted(self.by_boundary)[: -self.KEEP]:
            del self.by_boundary[old]

    def nearest(self, time_s: float) -> Any:
        """The snapshot of the boundary nearest to `time_s` that has one (None before any)."""
        if not self.by_boundary:
            return None
        key = min(self.by_boundary, key=lambda k: abs(k * self.window_s - time_s))
        return self.by_boundary[key]

    def delta(self, start_s: float, end_s: float) -> dict[str, Any]:
        """Triton's statistics from `start_s` to `end_s` (window boundaries), per model; {} before any snapshot."""
        before, after = self.nearest(start_s), self.nearest(end_s)
        if before is None or after is None:
            return {}
        return self.server_delta(before, after)
