"""Worker -> master: each worker's windows ride on Locust's own worker reports, and its last
ones on a report of the same kind sent the moment its users stop.

worker: report_to_master  ->  data["triton_loadtest"] = {windows, cpu_s, throttle, stalls, final, stopped_s, traces}
worker: test_stop         ->  Locust's "stats" report, at once (Locust's numbers and the suite's windows)
master: worker_report     ->  the recording run merges them; Locust merges its own

Why the last report is sent at test_stop: at a headless `-t` end or Ctrl-C, Locust's master
fires its test_stop before telling the workers anything, then sends "quit" and stops listening
0.5 s later; a worker's last windows waited for its next periodic report (every 3 s) and a
worker slower than 0.5 s lost them (seen under load: Triton 846 requests, the run 644). So the
master first sends STOP_MESSAGE to every running worker and waits for their final reports
while it still listens (RunLifecycle.stop_workers); a worker that misses the deadline is named
in summary.json's faults.

Why it is Locust's own report, not a message of the suite's: Locust's numbers (its console,
CSV and web UI table) of the requests since the worker's last periodic report, the requests
cut at the stop among them, then reach the master with the suite's, in the same message; a
report of the suite's alone left Locust's table short of them (13,254 requests against the
suite's 13,256) or waiting for the next periodic report, after the web UI's page had stopped.

Why a final report carries `stopped_s`, the moment the worker's users stopped: the master's own
test_stop is no measure of when the run ended. At a `-t` end it fires before any worker is told
to stop (a 300-ms request then ended 250 ms after the master's "end"); after STOP in the web UI,
Locust's master polls its workers' user count once a second before firing it. The run ends
when the last worker's users stopped (RunLifecycle.finish), as a single process's does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from locust.exception import RPCError
from locust.runners import STATE_STOPPED

from loadtests.recording.throttling import add as add_throttle
from loadtests.run.active_run import ActiveRun
from loadtests.run.process import SuiteProcess
from loadtests.run.stopping import StopGrace

logger = logging.getLogger(__name__)

REPORT_KEY = "triton_loadtest"
# Master -> worker: stop your users now and send your final report.
STOP_MESSAGE = "triton_loadtest_stop"
# Worker -> master: Locust's report type, which the last one shares (its "final" is true).
REPORT_MESSAGE = "stats"


class WorkerShipping:
    """On a worker: drain the recorder into every report to the master."""

    def __init__(self, process: SuiteProcess, grace: StopGrace) -> None:
        self.process = process
        self.grace = grace
        self.stopped_s: float | None = None  # when this test's users stopped (the recorder's clock)

    def register(self) -> None:
        """Register after the local sender: its test_stop (in-flight requests in) comes first."""
        environment = self.process.environment
        environment.events.test_start.add_listener(self.on_test_start)
        environment.events.report_to_master.add_listener(self.on_report_to_master)
        environment.events.test_stop.add_listener(self.on_test_stop)
        environment.runner.register_message(STOP_MESSAGE, self.on_stop_message)

    def on_test_start(self, **_kwargs) -> None:
        self.stopped_s = None
        # This test's CPU, throttling and stalls start now (not at the worker's start or the last test).
        self.process.take_cpu()
        self.process.take_throttle()
        self.process.take_stalls()

    def on_report_to_master(self, client_id, data, **_kwargs) -> None:
        runner = self.process.environment.runner
        final = runner is not None and runner.state == STATE_STOPPED  # users stopped: nothing more to come
        data[REPORT_KEY] = self.report(final)

    def report(self, final: bool) -> dict:
        """The windows since the last report, this process's CPU, throttling and stalls."""
        process = self.process
        self.grace.follow(process.slowest_ms)
        drained_s = process.recorder.clock()  # what is recorded from now on falls in later windows
        return {
            "windows": process.recorder.drain(),
            "drained_s": drained_s,
            "cpu_s": process.take_cpu(),
            "throttle": process.take_throttle(),
            "stalls": process.take_stalls(),
            "final": final,
            "stopped_s": self.stopped_s if final else None,
            "traces": process.traces.drain(),
        }

    def on_test_stop(self, **_kwargs) -> None:
        if self.stopped_s is None:  # Locust's test_stop here: every user of this worker has stopped
            self.stopped_s = self.process.recorder.clock()
        self.send_final_report()

    def send_final_report(self) -> None:
        """Everything recorded, Locust's numbers and the suite's, to the master at once (not with
        Locust's next report, 3 s on): a report as Locust's own sends it, made by the same event."""
        runner = self.process.environment.runner
        data: dict = {}
        self.process.environment.events.report_to_master.fire(client_id=runner.client_id, data=data)
        try:
            runner.send_message(REPORT_MESSAGE, data)
        except RPCError as error:  # the master is gone: it names this worker, or writes nothing
            logger.warning("final report not sent to the master: %s", error)

    def on_stop_message(self, *_args, **_kwargs) -> None:
        """The master's STOP_MESSAGE: stop the users (test_stop then sends the final report);
        already stopped, send an (empty) final report again."""
        runner = self.process.environment.runner
        if runner.state == STATE_STOPPED:
            self.send_final_report()
        else:
            runner.stop()


class MasterReceiving:
    """On the master: merge every worker report into the run being recorded."""

    def __init__(self, process: SuiteProcess, active: Callable[[], ActiveRun | None]) -> None:
        self.process = process
        self.active = active

    def register(self) -> None:
        environment = self.process.environment
        environment.events.worker_report.add_listener(self.on_worker_report)

    def on_worker_report(self, client_id, data, **_kwargs) -> None:
        report = data.get(REPORT_KEY)
        if report is not None:
            self.merge(client_id, report, data.get("user_count"))

    def merge(self, client_id: str, report: dict, users: int | None) -> None:
        """One worker's report into the run's totals and fault log."""
        run = self.active()
        if run is None:
            if report["windows"]:
                logger.warning("worker %s reported after the run was written: not in its summary", client_id)
            return
        run.aggregator.merge(report["windows"])
        run.aggregator.note_drained(client_id, report.get("drained_s"))
        run.faults.worker_reported(client_id, report["windows"], users, final=report.get("final", False))
        run.cpu_s += report["cpu_s"]
        run.workers_reported.add(client_id)
        if report.get("stopped_s") is not None:
            run.workers_stopped_s[client_id] = report["stopped_s"]
        run.throttle = add_throttle(run.throttle, report.get("throttle"))
        run.faults.stalled(client_id, report.get("stalls") or ())
        run.client_traces.extend(report.get("traces") or ())
