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

from locust.runners import MasterRunner

from loadtests.run import exporter, webui
from loadtests.run.active_run import ActiveRun
from loadtests.run.lifecycle import RunLifecycle
from loadtests.run.live_snapshot import LiveEndpoint, LiveSnapshot, model_totals
from loadtests.run.preflight import Preflight
from loadtests.run.process import SuiteProcess
from loadtests.run.webui_report import ReportPages

logger = logging.getLogger(__name__)


class LiveViews:
    """The current numbers for the web UI tab and the Prometheus exporter."""

    def __init__(self, process: SuiteProcess, lifecycle: RunLifecycle) -> None:
        self.process = process
        self.lifecycle = lifecycle
        self.finished: LiveSnapshot | None = None  # the last test's final numbers
        self.reports: ReportPages | None = None  # with a web UI: each finished test's report

    def register(self) -> None:
        self.process.environment.events.test_start.add_listener(self.on_test_start)
        self.process.events.run_finished.add_listener(self.on_run_finished)

    def install(self, web_ui, preflight: Preflight) -> None:
        """At init: the web UI tab (with a web UI) and the exporter (--prometheus-port); exits 2
        when the exporter's port cannot be bound."""
        if web_ui is not None:
            webui.install(web_ui, self.snapshot, preflight)
            self.reports = ReportPages()
            self.reports.install(web_ui.app, web_ui.auth_required_if_enabled)
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

    def on_run_finished(self, path: Path, **_kwargs) -> None:
        if self.reports is not None:
            self.reports.write(Path(path))
        if self.lifecycle.last is not None:
            final = of_run(self.lifecycle.last, 0, 0, final=True)
            self.finished = replace(final, open_loop=self.process.settings.open_loop)

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
