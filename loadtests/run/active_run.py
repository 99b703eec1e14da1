"""The run being recorded on the master or single process: where it writes, what it merges,
what it polls. Created at test start by `RunLifecycle`, finished once."""

from __future__ import annotations

from dataclasses import dataclass, field

import gevent

from loadtests.recording.faults import FaultLog
from loadtests.recording.run_dir import RunDirectory
from loadtests.recording.windows import RunAggregator
from loadtests.triton_stats.poller import ServerWatch


@dataclass
class ActiveRun:
    """One test on the master or single process."""

    directory: RunDirectory
    aggregator: RunAggregator
    server: ServerWatch
    faults: FaultLog
    # The models summary.json's `server` keeps besides those the requests named (None: every
    # model watched): set when the run watches every ready model for classes' own tasks.
    keep_models: frozenset[str] | None = None
    loop: gevent.Greenlet | None = None
    cpu_s: float = 0.0
    throttle: dict[str, int] | None = None
    # The workers whose reports were merged (their Locust client ids): summary.json says how
    # many processes generated the load, so a run that lost or never had its workers shows it.
    workers_reported: set[str] = field(default_factory=set)
    # When each worker's users stopped, from its final report (run/shipping.py): the run's end.
    workers_stopped_s: dict[str, float] = field(default_factory=dict)
    warned_behind: bool = False
    # When the master stops waiting for workers' final reports (time.monotonic), set by the
    # first wait: later waits (test_stop, quitting) share it, so a silent worker costs it once.
    reports_due_by: float | None = None
    # --trace-sample: every process's traced requests (loadtests/tracing/client_log.py), joined at the end.
    client_traces: list = field(default_factory=list)

    def merged_slowest_ms(self) -> float:
        """The slowest request in the merged totals (how the master follows its workers' slowest)."""
        slowest_us = max((t.histogram.get_max_value() for t in self.aggregator.totals.values()), default=0)
        return slowest_us / 1000
