"""Wires the suite into one Locust Environment: settings, endpoints, recording, run directory.

Listeners (registered by `install(events)` from the locustfile):
- init_command_line_parser: the suite's options;
- init: on a standalone or master process in headless mode, the pre-flight of every
  selected user class, so bad input exits with code 2 before any load is sent;
- test_start: settings re-read (workers receive options only now, and the web UI may
  have changed them); on the master or single process, a new run directory, Triton's
  metadata, and the server-side pollers;
- request: every request recorded in the current window's exact histograms;
- report_to_master / worker_report: workers ship their windows, the master merges;
- test_stop / quitting: the master or single process closes the windows and writes the
  summary (once per run, also when stopped early by Ctrl-C or an error).
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from dataclasses import dataclass, field

import gevent
from gevent.lock import Semaphore
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_STOPPED, MasterRunner, WorkerRunner

from loadtests import exporter, webui
from loadtests import options as suite_options
from loadtests.clients import open_client
from loadtests.endpoints import Endpoint, model_name_for, prepare_endpoint
from loadtests.errors import StartupError
from loadtests.recording.console import print_exact_summary
from loadtests.recording.live import LiveEndpoint, LiveSnapshot
from loadtests.recording.run_dir import RunDirectory
from loadtests.recording.server_stats import compute_delta
from loadtests.recording.server_watch import ServerWatch
from loadtests.recording.triton_info import fetch_triton_info
from loadtests.recording.windows import RunAggregator, WindowRecorder
from loadtests.traffic import shapes as traffic_shapes

logger = logging.getLogger(__name__)
REPORT_KEY = "triton_loadtest"
# After the master's test_stop, workers' last windows arrive with their next report (every 3 s).
MASTER_FINAL_REPORT_WAIT_S = 4.0


@dataclass
class Run:
    """One test on the master or single process: where it writes, what it merges, what it polls."""

    directory: RunDirectory
    aggregator: RunAggregator
    server: ServerWatch
    loop: gevent.Greenlet | None = None
    cpu_s: float = 0.0
    shape: traffic_shapes.TrafficShape | None = None


@dataclass
class Runtime:
    """The suite's state for one Environment (one per process)."""

    environment: Environment
    settings: suite_options.Settings = field(default_factory=suite_options.Settings)
    recorder: WindowRecorder = field(default_factory=WindowRecorder)
    endpoints: dict[tuple[str, str], Endpoint] = field(default_factory=dict)
    run: Run | None = None
    _cpu_mark: float = field(default_factory=time.process_time)
    _locks: dict[tuple[str, str], Semaphore] = field(default_factory=dict)
    _user_seed: int = 0

    # -- settings and endpoints -------------------------------------------------------
    def reload_settings(self) -> None:
        settings = suite_options.Settings.from_options(self.environment.parsed_options)
        if settings != self.settings:
            self.settings = settings
            self.endpoints.clear()
        self.recorder.window_s = settings.window_s

    def kinds_in_run(self) -> set[str]:
        return {cls.workload for cls in self.environment.user_classes if getattr(cls, "workload", None)}

    def models_in_run(self) -> list[str]:
        models = []
        for kind in sorted(self.kinds_in_run()):
            try:
                models.append(model_name_for(kind, self.settings, self.kinds_in_run()))
            except StartupError:
                continue
        return sorted(set(models))

    def endpoint(self, kind: str, protocol: str) -> Endpoint:
        """The prepared endpoint for a user class, built once per process (first user waits)."""
        key = (kind, protocol)
        lock = self._locks.setdefault(key, Semaphore())
        with lock:
            if key not in self.endpoints:
                model = model_name_for(kind, self.settings, self.kinds_in_run())
                client = open_client(protocol, self.settings, self.environment.events.request)
                try:
                    self.endpoints[key] = prepare_endpoint(kind, client, model, self.settings)
                finally:
                    client.close()
                logger.info("prepared %s: batch sizes %s", self.endpoints[key].name, self.settings.batch_size.text)
        return self.endpoints[key]

    def next_user_seed(self) -> int:
        self._user_seed += 1
        return self._user_seed

    def preflight(self) -> None:
        """Prepare every selected user class's endpoint; raises StartupError."""
        for cls in self.environment.user_classes:
            if getattr(cls, "workload", None):
                self.endpoint(cls.workload, cls.protocol)

    def fail_startup(self, error: StartupError) -> None:
        """A startup error found during a run (worker, web UI): one line, exit code 2, stop."""
        logger.error("error: %s", error)
        print(f"error: {error}", file=sys.stderr, flush=True)
        self.environment.process_exit_code = error.exit_code
        runner = self.environment.runner
        if runner is not None:
            gevent.spawn(runner.quit)

    def take_cpu(self) -> float:
        """CPU seconds of this process since the last call."""
        now = time.process_time()
        spent, self._cpu_mark = now - self._cpu_mark, now
        return spent

    # -- a run on the master or single process ----------------------------------------
    @property
    def is_local(self) -> bool:
        return not isinstance(self.environment.runner, MasterRunner | WorkerRunner)

    def start_run(self) -> None:
        settings = self.settings
        models = self.models_in_run()
        directory = RunDirectory.create(
            self.environment,
            settings,
            triton=fetch_triton_info(settings.triton_http, models),
            window_s=settings.window_s,
        )
        server = ServerWatch(settings.triton_http, settings.triton_metrics, models, settings.server_poll_s)
        server.start()
        self.run = Run(directory, RunAggregator(window_s=settings.window_s, sink=directory), server)
        self.run.loop = gevent.spawn(self._run_loop, self.run)
        shape = self.environment.shape_class
        if isinstance(shape, traffic_shapes.TrafficShape):
            self.run.shape = shape
            shape.on_step = lambda _step, run=self.run: self.write_steps(run)
            self.write_steps(self.run)  # step 0 began before test_start created the directory

    def write_steps(self, run: Run, final: bool = False) -> None:
        """steps.json: the load shape's step boundaries, on the run directory's clock."""
        if run.shape is not None and run.shape.profile is not None and not run.directory.finished:
            run.directory.write_json("steps.json", run.shape.record(relative_to=run.directory.started_at, final=final))

    def _run_loop(self, run: Run) -> None:
        """Every window: merge local data (single process), note users, close old windows."""
        while True:
            gevent.sleep(run.aggregator.window_s)
            self._collect_local(run)
            runner = self.environment.runner
            run.aggregator.note_users(runner.user_count if runner is not None else 0)
            run.aggregator.close_windows()

    def _collect_local(self, run: Run) -> None:
        # Every process with users drains its own recorder: the single process here, workers into reports.
        if self.is_local:
            run.aggregator.merge(self.recorder.drain())
        run.cpu_s += self.take_cpu()

    def live(self) -> LiveSnapshot:
        """The current merged numbers (what the web UI tab and the Prometheus endpoint show)."""
        runner = self.environment.runner
        users = runner.user_count if runner is not None else 0
        workers = len(runner.clients.ready + runner.clients.running) if isinstance(runner, MasterRunner) else 0
        run = self.run
        if run is None:
            return LiveSnapshot(users=users, workers=workers)
        aggregator = run.aggregator
        endpoints = [
            LiveEndpoint.of(total, aggregator.last_window.get(name), aggregator.window_s)
            for name, total in sorted(aggregator.totals.items())
        ]
        snapshots = run.server.stats.snapshots
        server = compute_delta(snapshots[-2], snapshots[-1]) if len(snapshots) >= 2 else {}
        return LiveSnapshot(endpoints=endpoints, server=server, users=users, workers=workers)

    def finish_run(self) -> None:
        """Close every window, stop the pollers, write the summary. Idempotent."""
        run, self.run = self.run, None
        if run is None:
            return
        if run.loop is not None:
            run.loop.kill(block=False)
        self._collect_local(run)
        run.aggregator.close_windows(final=True)
        server = run.server.stop(run.directory)
        extra = {"late_worker_windows": run.aggregator.late_messages} if run.aggregator.late_messages else None
        path = run.directory.write_summary(run.aggregator.totals, run.cpu_s, server=server, extra=extra)
        run.directory.close()
        print(f"Run directory: {path}", flush=True)
        print_exact_summary(run.aggregator.totals)


_runtimes: weakref.WeakKeyDictionary[Environment, Runtime] = weakref.WeakKeyDictionary()


def runtime_for(environment: Environment) -> Runtime:
    runtime = _runtimes.get(environment)
    if runtime is None:
        runtime = _runtimes[environment] = Runtime(environment)
    return runtime


def install(events) -> None:
    """Register the suite's listeners on Locust's events (call once, from the locustfile)."""
    # Request and report events carry no environment; Locust runs one per process, bound at init.
    bound: dict[str, Runtime] = {}

    @events.init_command_line_parser.add_listener
    def _add_options(parser, **_kwargs) -> None:
        suite_options.add_arguments(parser)

    @events.init.add_listener
    def _on_init(environment: Environment, **kwargs) -> None:
        runtime = bound["runtime"] = runtime_for(environment)
        options = environment.parsed_options
        if options is None or isinstance(environment.runner, WorkerRunner):
            return  # workers get their options at test_start
        try:
            runtime.reload_settings()
            traffic_shapes.install_shape(environment, kwargs.get("web_ui"))
            # Let a stopping user finish its in-flight request (at most one request timeout):
            # a request Triton counted but the user never reported would break exact counts.
            if not environment.stop_timeout:
                environment.stop_timeout = runtime.settings.request_timeout_s
            if options.headless or getattr(options, "autostart", False):
                runtime.preflight()
        except StartupError as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)
        if kwargs.get("web_ui") is not None:
            webui.install(kwargs["web_ui"], runtime.live)
        port = getattr(options, "prometheus_port", 0)
        if port:
            try:
                exporter.serve(options.prometheus_host, port, runtime.live)
            except OSError as error:
                print(f"error: --prometheus-port {port}: {error.strerror}", file=sys.stderr, flush=True)
                sys.exit(2)
            logger.info("load generator metrics at http://%s:%d/metrics", options.prometheus_host, port)

    @events.test_start.add_listener
    def _on_test_start(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        try:
            runtime.reload_settings()
        except StartupError as error:
            runtime.fail_startup(error)
            return
        runtime.take_cpu()
        if not isinstance(environment.runner, WorkerRunner):
            runtime.finish_run()  # a previous web-UI run that was never finished
            runtime.start_run()

    @events.test_stop.add_listener
    def _on_test_stop(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        if runtime.run is not None:
            runtime.write_steps(runtime.run, final=True)  # the last step ends at the real stop
        if runtime.is_local:
            runtime.finish_run()
        elif isinstance(environment.runner, MasterRunner) and runtime.run is not None:
            run = runtime.run
            # Workers send their last windows with their next report; quitting may come first.
            gevent.spawn_later(MASTER_FINAL_REPORT_WAIT_S, lambda: runtime.run is run and runtime.finish_run())

    @events.request.add_listener
    def _on_request(request_type, name, response_time, exception=None, context=None, **_kwargs) -> None:
        endpoint = (context or {}).get("endpoint")
        runtime = bound.get("runtime")
        if endpoint is None or runtime is None:
            return  # not one of ours
        runtime.recorder.record(
            endpoint,
            name,
            request_type,
            response_time * 1000.0,
            context.get("batch_size", 1),
            str(exception) if exception is not None else None,
        )

    @events.report_to_master.add_listener
    def _on_report_to_master(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        if runtime is not None:
            data[REPORT_KEY] = {"windows": runtime.recorder.drain(), "cpu_s": runtime.take_cpu()}

    @events.worker_report.add_listener
    def _on_worker_report(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        report = data.get(REPORT_KEY)
        if runtime is None or report is None or runtime.run is None:
            return
        runtime.run.aggregator.merge(report["windows"])
        runtime.run.cpu_s += report["cpu_s"]

    @events.quitting.add_listener
    def _on_quitting(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        runner = environment.runner
        if runtime.run is not None and runner is not None and runner.state not in (STATE_STOPPED, STATE_INIT):
            # Ctrl-C: Locust fires quitting before it stops the runner. Stop it first (users
            # finish their in-flight requests, workers send their final reports), so nothing
            # measured is left out of the run directory.
            runner.quit()
        runtime.finish_run()
