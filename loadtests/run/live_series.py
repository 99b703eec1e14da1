"""The run over time, for the web UI's charts: one point per closed recording window.

Kept on the master (or single process) only when a web UI is served: each closed window (the
suite's `window_closed` event) adds the numbers timeseries.csv gets for it, per endpoint
(requests, failures by class, inferences per second over the part of the window the run covered,
exact p50 and p99 from the window's merged histogram), the load generator's CPU since the last
window (every process's, as summary.json's `load_generator.cpu_s` adds them), and Triton's latest
statistics interval per model when a new one has been read (queue and compute per request, the
average executed batch). The page asks for the points it has not seen yet:

    series.since(after=41)   # {"run": ..., "points": [...], "server": [...], "next": 57, ...}

The last MAX_POINTS windows are kept (10 minutes at the default 1-s window): the charts are
the view of a run in progress; the whole run is in its directory and its report.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any

from loadtests.recording.histograms import EndpointStats
from loadtests.run.active_run import ActiveRun

MAX_POINTS = 600


def endpoint_point(stats: EndpointStats, covered_s: float) -> dict[str, Any]:
    """One endpoint's numbers in one window, as timeseries.csv writes them (latencies in µs;
    None without a success in the window: no latency was measured)."""
    measured = stats.histogram.get_total_count() > 0
    latency = stats.latency_summary_us() if measured else {}
    return {
        "requests": stats.requests,
        "failures": dict(stats.failures),
        "inferences": stats.inferences,
        "infer_per_s": round(stats.inferences / covered_s, 3),
        "p50_us": latency.get("p50"),
        "p99_us": latency.get("p99"),
    }


class LiveSeries:
    """The points of the current (or last) test, numbered from 1 for the page's `after`."""

    def __init__(self, clock=time.time) -> None:
        self.clock = clock
        self.begin(None, 0.0)

    def begin(self, run_dir: Path | None, started_at: float) -> None:
        """A test started (its directory and clock): forget the last one."""
        self.run_dir = str(run_dir) if run_dir is not None else ""
        self.started_at = started_at
        self.final = False
        self.windows: deque[dict[str, Any]] = deque(maxlen=MAX_POINTS)
        self.server: deque[dict[str, Any]] = deque(maxlen=MAX_POINTS)
        self.count = 0  # points added since the test started (the last one's number)
        self._cpu_mark: tuple[float, float] | None = None  # (wall clock, the run's cpu_s) at the last window
        self._server_mark: float | None = None  # the end of the last server interval taken

    def add_window(self, start_s: float, end_s: float, endpoints: dict[str, EndpointStats], run: ActiveRun) -> None:
        """A window closed (listener of `window_closed`; `run` the active run)."""
        if not self.run_dir:
            self.begin(run.directory.path, run.directory.started_at)
        covered_s = run.directory.covered_s(start_s, end_s - start_s)
        now = self.clock()
        cpu_pct = None
        # Several windows close at once at the end (and after a stall): CPU is drawn over half a
        # window of wall time at least, else the window gets none (a gap, not a dip to 0).
        if self._cpu_mark is None or now - self._cpu_mark[0] >= (end_s - start_s) / 2:
            if self._cpu_mark is not None:
                cpu_pct = round((run.cpu_s - self._cpu_mark[1]) / (now - self._cpu_mark[0]) * 100, 1)
            self._cpu_mark = (now, run.cpu_s)
        self.count += 1
        self.windows.append(
            {
                "n": self.count,
                "t": round(start_s - self.started_at, 3),
                "endpoints": {name: endpoint_point(stats, covered_s) for name, stats in sorted(endpoints.items())},
                "cpu_pct": cpu_pct,
            }
        )
        self._add_server(run)

    def _add_server(self, run: ActiveRun) -> None:
        interval = run.server.stats.last_interval
        if interval is None or interval[1] == self._server_mark:
            return
        _t0, t1, deltas = interval
        self._server_mark = t1
        models = {
            model: {
                "queue_ms": round(delta.queue_us / 1000, 3),
                "compute_ms": round(delta.compute_infer_us / 1000, 3),
                "avg_batch": round(delta.avg_batch, 2),
            }
            for model, delta in sorted(deltas.items())
            if delta.requests > 0  # an idle model has no queue, compute or batch to draw: a gap
        }
        self.server.append({"n": self.count, "t": round(t1 - self.started_at, 3), "models": models})

    def finish(self) -> None:
        """The test's last window is in (run_finished): the charts stop asking after this."""
        self.final = True

    def since(self, after: int) -> dict[str, Any]:
        """The points numbered above `after` (windows, and server intervals taken with them)."""
        return {
            "run": self.run_dir,
            "final": self.final,
            "next": self.count,
            "points": [point for point in self.windows if point["n"] > after],
            "server": [point for point in self.server if point["n"] > after],
        }
