"""Worker -> master: each worker's windows ride on Locust's own worker reports.

worker: report_to_master  ->  data["triton_loadtest"] = {windows, cpu_s, throttle, final}
master: worker_report     ->  the recording run merges them (RunLifecycle.active)
"""

from __future__ import annotations

from collections.abc import Callable

from locust.runners import STATE_STOPPED

from loadtests.recording.throttling import add as add_throttle
from loadtests.run.active_run import ActiveRun
from loadtests.run.process import SuiteProcess
from loadtests.run.stop_grace import StopGrace

REPORT_KEY = "triton_loadtest"


class WorkerShipping:
    """On a worker: drain the recorder into every report to the master."""

    def __init__(self, process: SuiteProcess, grace: StopGrace) -> None:
        self.process = process
        self.grace = grace

    def register(self) -> None:
        self.process.environment.events.test_start.add_listener(self.on_test_start)
        self.process.environment.events.report_to_master.add_listener(self.on_report_to_master)

    def on_test_start(self, **_kwargs) -> None:
        # This test's CPU and throttling start now (not at the worker's start or the last test).
        self.process.take_cpu()
        self.process.take_throttle()

    def on_report_to_master(self, client_id, data, **_kwargs) -> None:
        process = self.process
        runner = process.environment.runner
        final = runner is not None and runner.state == STATE_STOPPED  # users stopped: nothing more to come
        self.grace.follow(process.slowest_ms)
        data[REPORT_KEY] = {
            "windows": process.recorder.drain(),
            "cpu_s": process.take_cpu(),
            "throttle": process.take_throttle(),
            "final": final,
        }


class MasterReceiving:
    """On the master: merge every worker report into the run being recorded."""

    def __init__(self, process: SuiteProcess, active: Callable[[], ActiveRun | None]) -> None:
        self.process = process
        self.active = active

    def register(self) -> None:
        self.process.environment.events.worker_report.add_listener(self.on_worker_report)

    def on_worker_report(self, client_id, data, **_kwargs) -> None:
        report = data.get(REPORT_KEY)
        run = self.active()
        if report is None or run is None:
            return
        run.aggregator.merge(report["windows"])
        run.faults.worker_reported(
            client_id, report["windows"], data.get("user_count"), final=report.get("final", False)
        )
        run.cpu_s += report["cpu_s"]
        run.throttle = add_throttle(run.throttle, report.get("throttle"))
