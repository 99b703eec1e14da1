"""Live views of the run on the master or single process: the web UI tab and `--prometheus-port`.

Both show the same merged numbers the run directory is written from; after a test stops,
that test's final numbers until the next one starts.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import gevent.event
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner

from loadtests.recording.histograms import RunTotals
from loadtests.run import exporter, webui, webui_charts
from loadtests.run.active_run import ActiveRun
from loadtests.run.finish import traffic_json
from loadtests.run.lifecycle import RunLifecycle
from loadtests.run.live_diagnosis import EVERY_S, LiveDiagnosis
from loadtests.run.live_series import LiveSeries
from loadtests.run.live_snapshot import LiveEndpoint, LiveSnapshot, model_totals
from loadtests.run.preflight import Preflight
from loadtests.run.process import SuiteProcess
from loadtests.run.stopping import STOP_GRACE_S
from loadtests.run.webui_report import ReportPages
from loadtests.run_format.outcome import counts_sentence

logger = logging.getLogger(__name__)
# How long the web UI's poll waits for a stopped test's final numbers beyond the stop grace: a
# master waits up to 60 s more for its workers to stop (Locust), then reads Triton's statistics.
SETTLE_MARGIN_S = 90.0


class LiveViews:
    """The current numbers for the web UI tab and the Prometheus exporter."""

    def __init__(self, process: SuiteProcess, lifecycle: RunLifecycle) -> None:
        self.process = process
        self.lifecycle = lifecycle
        self.finished: LiveSnapshot | None = None  # the last test's final numbers
        self.reports: ReportPages | None = None  # with a web UI: each finished test's report
        self.series: LiveSeries | None = None  # with a web UI: the run over time, for its charts
        self.diagnosis: LiveDiagnosis | None = None  # with a web UI: the run so far, judged
        self.settled = gevent.event.Event()  # no run, or the last one finished (its final numbers are in)
        self.settled.set()

    def register(self) -> None:
        self.process.environment.events.test_start.add_listener(self.on_test_start)
        self.process.events.run_finished.add_listener(self.on_run_finished)

    def install(self, web_ui, preflight: Preflight) -> None:
        """At init: the web UI tab (with a web UI) and the exporter (--prometheus-port); exits 2
        when the exporter's port cannot be bound."""
        if web_ui is not None:
            webui.install(web_ui, self.snapshot, preflight, self.settle)
            self.reports = ReportPages()
            self.reports.install(web_ui.app, web_ui.auth_required_if_enabled)
            self.series = LiveSeries()
            self.diagnosis = LiveDiagnosis(self.provisional_summary)
            self.process.events.run_started.add_listener(self.on_run_started)
            self.process.events.window_closed.add_listener(self.on_window_closed)
            webui_charts.install(web_ui.app, self.series, self.health, web_ui.auth_required_if_enabled)
        settings = self.process.settings
        if not settings.prometheus_port:
            return
        host, port = settings.prometheus_host, settings.prometheus_port
        try:
            exporter.serve(host, port, self.snapshot)
        except OSError as error:
            print(f"error: --prometheus-port {port}: {error.strerror}", file=sys.stderr, flush=True)
            sys.exit(2)
        logger.info("load generator metrics at http://%s:%d/metrics", host, port)

    def on_test_start(self, **_kwargs) -> None:
        self.finished = None

    def on_run_started(self, run, **_kwargs) -> None:
        self.settled.clear()
        if self.series is not None:
            self.series.begin(run.path, run.started_at)

    def on_window_closed(self, start_s: float, end_s: float, endpoints: dict, **_kwargs) -> None:
        run = self.lifecycle.active or self.lifecycle.last  # the final windows close as the run finishes
        if self.series is not None and run is not None:
            self.series.add_window(start_s, end_s, endpoints, run)

    def on_run_finished(self, path: Path, **_kwargs) -> None:
        if self.series is not None:
            self.series.finish()
        if self.reports is not None:
            self.reports.write(Path(path))
        if self.lifecycle.last is not None:
            final = of_run(self.lifecycle.last, 0, 0, final=True)
            self.finished = replace(final, open_loop=self.process.settings.open_loop)
        self.settled.set()

    def settle(self) -> None:
        """Before the web UI's page is told the test is no longer running (it stops polling at
        that answer, and keeps what it shows): wait until the stopped test's final numbers are in.
        Locust says stopping/stopped before the suite has closed the run's windows and read
        Triton's final statistics; an answer in that gap left the tab on live numbers, or blank."""
        runner = self.process.environment.runner
        if runner is None or runner.state in (STATE_SPAWNING, STATE_RUNNING) or self.settled.is_set():
            return
        grace_s = self.process.environment.stop_timeout or STOP_GRACE_S
        if not self.settled.wait(timeout=grace_s + SETTLE_MARGIN_S):
            logger.warning("the stopped test's final numbers were not in after %.0f s", grace_s + SETTLE_MARGIN_S)

    def snapshot(self) -> LiveSnapshot:
        """The current merged numbers (what the web UI tab and the Prometheus endpoint show)."""
        runner = self.process.environment.runner
        users = runner.user_count if runner is not None else 0
        workers = len(runner.clients.ready + runner.clients.running) if isinstance(runner, MasterRunner) else 0
        run = self.lifecycle.active
        if run is not None:
            return replace(of_run(run, users, workers), open_loop=self.process.settings.open_loop)
        if self.finished is not None:
            report = self.reports.cell(self.finished.run_dir) if self.reports is not None else ""
            return replace(self.finished, users=users, workers=workers, report=report)
        return LiveSnapshot(users=users, workers=workers)

    def health(self) -> list[str]:
        """The web UI's health line: after the test, the report's first screen once written, until
        then its outcome; while it runs, the outcome of the requests so far and, once judged (every
        EVERY_S while a page asks), the first screen's headline and diagnosis of the run so far."""
        if self.finished is not None and self.reports is not None:
            screen = self.reports.first_screens.get(Path(self.finished.run_dir))
            if screen:
                return screen
        snapshot = self.snapshot()
        if not snapshot.run_dir:
            return []
        by_class: dict[str, int] = {}
        for endpoint in snapshot.endpoints:
            for name, count in endpoint.failures.items():
                by_class[name] = by_class.get(name, 0) + count
        requests = sum(endpoint.requests for endpoint in snapshot.endpoints)
        sentence = counts_sentence(requests, sum(by_class.values()), by_class, snapshot.elapsed_s)
        if snapshot.final:
            return [sentence, "The report's diagnosis follows once the report is written."]
        judged = []
        if self.diagnosis is not None:
            self.diagnosis.ask()
            judged = self.diagnosis.lines_for(snapshot.run_dir)[1:]  # its outcome: the sentence above
        return [f"So far: {sentence}", *(judged or [f"The run so far is diagnosed every {EVERY_S:g} s."])]

    def provisional_summary(self) -> tuple[Path, dict] | None:
        """The running test's directory and the summary its end would write, of the run so far."""
        run = self.lifecycle.active
        if run is None:
            return None
        totals = RunTotals.of(run.aggregator.totals)
        summary = run.directory.summary(
            totals,
            run.cpu_s,
            server={model: delta.to_json() for model, delta in run.server.stats.total_delta().items()},
            traffic=traffic_json(self.process.settings, self.process.environment.shape_class),
            throttle=run.throttle,
            workers=len(run.workers_reported),
        )
        totals.release()  # every 15 s in a long run: its merged histograms freed now, not at a full collection
        return run.directory.path, summary


def of_run(run: ActiveRun, users: int, workers: int, final: bool = False) -> LiveSnapshot:
    """While running: rates and server-side numbers of the latest interval; final: of the whole run."""
    aggregator = run.aggregator
    duration_s = max((run.directory.stopped_at or time.time()) - run.directory.started_at, 1e-9)
    if final:
        window, window_s = aggregator.totals, duration_s
        server = run.server.stats.total_delta()  # what summary.json's `server` says
    else:
        window, window_s = aggregator.last_window, aggregator.window_s
        interval = run.server.stats.last_interval
        server = interval[2] if interval is not None else {}
    endpoints = [
        LiveEndpoint.of(total, window.get(name), window_s) for name, total in sorted(aggregator.totals.items())
    ]
    totals = model_totals(aggregator.totals, window, window_s)
    return LiveSnapshot(endpoints, server, users, workers, str(run.directory.path), final, totals, duration_s)
