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

import json
import logging
import sys
import time
import weakref
from dataclasses import dataclass, field, replace

import gevent
from gevent.lock import Semaphore
from locust.env import Environment
from locust.exception import RPCError
from locust.runners import (
    STATE_INIT,
    STATE_RUNNING,
    STATE_SPAWNING,
    STATE_STOPPED,
    MasterRunner,
    WorkerRunner,
)

from loadtests import exporter, slo_gate, webui
from loadtests import options as suite_options
from loadtests.clients import open_client
from loadtests.clients.base import CONNECTION_FAILURES
from loadtests.endpoints import Endpoint, model_name_for, prepare_endpoint
from loadtests.errors import SpecError, StartupError
from loadtests.events import RunStarted, SuiteEvents
from loadtests.interrupts import route_sigint_to_main_greenlet
from loadtests.outputs import check_outputs
from loadtests.recording.console import behind_schedule_warnings, print_exact_summary, print_faults
from loadtests.recording.faults import FaultLog
from loadtests.recording.live import LiveEndpoint, LiveSnapshot
from loadtests.recording.locust_csv import write_final_csv
from loadtests.recording.memory import return_freed_histograms_to_os
from loadtests.recording.run_dir import RunDirectory, used_run_dir_error
from loadtests.recording.server_stats import compute_delta
from loadtests.recording.server_watch import ServerWatch
from loadtests.recording.throttling import ThrottleMeter
from loadtests.recording.throttling import add as add_throttle
from loadtests.recording.triton_info import fetch_triton_info
from loadtests.recording.windows import RunAggregator, WindowRecorder
from loadtests.traffic import TrafficShape, install_shape
from loadtests.traffic.constants import RATE
from loadtests.traffic.open_loop import RATE_MESSAGE, ClientPool, OpenLoop, RatePlan
from loadtests.traffic.stand_in import settings_from_options
from loadtests.traffic.steps import Step

logger = logging.getLogger(__name__)
REPORT_KEY = "triton_loadtest"
# A stopping user lets its in-flight request finish for up to this long (Locust's stop
# timeout, unless --stop-timeout is given); a request still in flight then is cut and counted
# as "interrupted". A run so ends within a few seconds of -t whatever the server does (a frozen
# Triton included), and every request that went out is still in the counts.
STOP_GRACE_S = 2.0
# ... or longer when the run has seen slow successful requests: the grace follows this many times
# the slowest success so far (up to the request timeout), so a healthy model whose requests take
# seconds is never cut at the end, while a frozen server (no slow success yet) costs 2 s.
STOP_GRACE_PER_SLOWEST = 2.0
# The master waits for every worker's final report (sent when its users have stopped) at
# most this long past the stop grace; a worker that sends nothing by then is named in
# summary.json's faults (workers_without_final_report).
FINAL_REPORT_MARGIN_S = 0.5
# Master -> workers: stop your users now and send your final report (the headless -t end
# and Ctrl-C: Locust's quit() tells workers only after test_stop, and stops listening to
# them 0.5 s later, so a worker slower than that would lose its last windows).
STOP_MESSAGE = "triton_loadtest_stop"
# Worker -> master: the windows recorded up to the moment its users stopped, sent at once
# rather than with Locust's next periodic report (every 3 s, possibly after the summary).
FINAL_REPORT_MESSAGE = "triton_loadtest_final_report"
# A single process drains its own recorder just before it closes windows, so a window can
# close soon after it ends (a master keeps the aggregator's grace for workers' reports).
LOCAL_GRACE_S = 1.0
# How often the run loop merges and closes windows (at most once per window): closed
# windows reach observers such as the sweep shape within about a second.
RUN_LOOP_S = 1.0


@dataclass
class Run:
    """One test on the master or single process: where it writes, what it merges, what it polls."""

    directory: RunDirectory
    aggregator: RunAggregator
    server: ServerWatch
    faults: FaultLog
    loop: gevent.Greenlet | None = None
    cpu_s: float = 0.0
    throttle: dict[str, int] | None = None
    shape: TrafficShape | None = None
    rate_publisher: gevent.Greenlet | None = None
    warned_behind: bool = False
    # When the master stops waiting for workers' final reports (time.monotonic), set by the
    # first wait: the later waits (test_stop, quitting) share it, so a silent worker costs it once.
    reports_due_by: float | None = None


@dataclass
class Runtime:
    """The suite's state for one Environment (one per process)."""

    environment: Environment
    settings: suite_options.Settings = field(default_factory=suite_options.Settings)
    recorder: WindowRecorder = field(default_factory=WindowRecorder)
    endpoints: dict[tuple[str, str], Endpoint] = field(default_factory=dict)
    run: Run | None = None
    # The last test's final numbers, shown (web UI tab, Prometheus) until the next test starts.
    finished: LiveSnapshot | None = None
    # Open-loop traffic: the sender on a process with users; the total target rate on the
    # master or single process; the latest plan a worker received from its master.
    traffic: OpenLoop | None = None
    total_rate: float = 0.0
    rate_plan: RatePlan | None = None
    _cpu_mark: float = field(default_factory=time.process_time)
    _throttle: ThrottleMeter = field(default_factory=ThrottleMeter)
    # Slowest successful request seen by this process (ms), and whether the stop grace follows it
    # (no --stop-timeout given).
    slowest_ms: float = 0.0
    auto_stop_grace: bool = False
    _locks: dict[tuple[str, str], Semaphore] = field(default_factory=dict)
    _user_seed: int = 0
    # The suite's event spine for this Environment (loadtests/events.py): shapes fire on it.
    events: SuiteEvents = field(default_factory=SuiteEvents)

    def __post_init__(self) -> None:
        self.events.target_rate_changed.add_listener(lambda rate, **_kw: self.set_total_rate(rate))
        self.events.step_started.add_listener(self._on_step_started)

    # -- settings and endpoints -------------------------------------------------------
    def reload_settings(self) -> None:
        settings = suite_options.Settings.from_options(self.environment.parsed_options)
        if settings != self.settings:
            self.settings = settings
            self.endpoints.clear()
        self.recorder.window_s = settings.window_s
        if not isinstance(self.environment.runner, WorkerRunner):
            # What Locust's web UI shows as "Host": the suite's users ignore Locust's --host.
            self.environment.host = f"http://{settings.triton_http}"

    def check_traffic(self) -> None:
        """Open-loop traffic needs a rate: --rate, or a load shape with kind=rate; raises SpecError."""
        settings = self.settings
        shape = self.environment.shape_class
        if isinstance(shape, TrafficShape):
            kind = shape.target_kind
            if settings.open_loop and kind != RATE:
                raise SpecError(
                    f"--traffic {settings.traffic} with --load-shape {shape.name}: the shape sets the rate, "
                    "add kind=rate to --shape-args"
                )
        elif settings.open_loop and settings.rate <= 0:
            raise SpecError(f"--traffic {settings.traffic} needs --rate (requests/s) or a load shape with kind=rate")

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

    def check_start(self) -> None:
        """A test about to start from the web UI: the headless pre-flight on its options; raises StartupError."""
        self.reload_settings()
        self.check_traffic()
        slo_gate.validate(self)
        self.preflight()

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

    def adapt_stop_grace(self, slowest_ms: float) -> None:
        """Locust's stop timeout, read when users stop: STOP_GRACE_S, or twice the slowest success."""
        if self.auto_stop_grace:
            grace_s = max(STOP_GRACE_S, STOP_GRACE_PER_SLOWEST * slowest_ms / 1000.0)
            self.environment.stop_timeout = min(grace_s, max(self.settings.request_timeout_s, STOP_GRACE_S))

    def take_throttle(self) -> dict[str, int] | None:
        """This container's CPU-throttling counters since the last call (None without a cgroup)."""
        return self._throttle.take()

    # -- open-loop traffic ---------------------------------------------------------------
    def set_total_rate(self, rate: float) -> None:
        """The open-loop target in requests/s across all workers (from --rate or a kind=rate shape)."""
        self.total_rate = rate
        self.publish_rate()

    def publish_rate(self) -> None:
        """Tell every process with users its share: workers by message, the single process directly."""
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            plan = RatePlan(self.total_rate, runner.target_user_count or 0)
            runner.send_message(RATE_MESSAGE, plan.to_message())
        elif self.traffic is not None:
            self.traffic.set_plan(RatePlan(self.total_rate, 1))

    def receive_rate(self, plan: RatePlan) -> None:
        """A worker's rate message from the master (may arrive before this worker's test_start)."""
        self.rate_plan = plan
        if self.traffic is not None:
            self.traffic.set_plan(plan)

    def start_traffic(self) -> None:
        """At test start on a process with users: the open-loop sender (None in closed loop)."""
        self.stop_traffic()
        settings = self.settings
        if not settings.open_loop:
            return
        runner = self.environment.runner
        if isinstance(runner, WorkerRunner):
            plan, seed = self.rate_plan, max(runner.worker_index, 0) + 1

            def local_users() -> int:
                return runner.target_user_count or 0

        else:
            plan, seed = RatePlan(self.total_rate, 1), 0

            def local_users() -> int:
                return 1

        request_event = self.environment.events.request
        clients = ClientPool(lambda protocol: open_client(protocol, settings, request_event))
        self.traffic = OpenLoop(
            settings.traffic,
            settings.max_in_flight,
            settings.drop_when_saturated,
            clients,
            local_users,
            plan,
            seed,
            burstiness=settings.burstiness or 1.0,
        )

    def wait_for_quiet(self) -> None:
        """Before housekeeping that blocks the loop: wait for a gap in this process's send schedule."""
        if self.traffic is not None:
            self.traffic.wait_for_quiet()

    def stop_traffic(self) -> None:
        if self.traffic is not None:
            self.traffic.close()
            self.traffic = None

    def traffic_json(self, run: Run) -> dict:
        """summary.json's "traffic": what pattern the run used."""
        settings = self.settings
        if not settings.open_loop:
            return {"mode": "closed"}
        rate_shape = run.shape is not None and run.shape.profile is not None
        return {
            "mode": settings.traffic,
            "rate": None if rate_shape else settings.rate,
            "rate_shape": run.shape.name if rate_shape else None,
            "max_in_flight": settings.max_in_flight,
            "drop_when_saturated": settings.drop_when_saturated,
            **({"burstiness": settings.burstiness} if settings.burstiness is not None else {}),
        }

    def _publish_rate_loop(self) -> None:
        # Also reaches workers that join late, and follows user-count changes from the web UI.
        while True:
            gevent.sleep(1.0)
            self.publish_rate()

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
        self.finished = None
        logger.info("run directory: %s", directory.path)
        poll_s = settings.server_poll_s
        server = ServerWatch(
            settings.triton_http,
            settings.triton_metrics,
            models,
            poll_s,
            self.wait_for_quiet,
            metrics_csv=directory.path / "server_metrics.csv",
        )
        server.start()
        grace = {"grace_s": LOCAL_GRACE_S} if self.is_local else {}
        aggregator = RunAggregator(window_s=settings.window_s, sink=directory, started_s=directory.started_at, **grace)
        faults = FaultLog(directory.started_at, settings.window_s, outage_gap_s=2 * poll_s)
        self.run = Run(directory, aggregator, server, faults)
        self.run.loop = gevent.spawn(self._run_loop, self.run)
        shape = self.environment.shape_class
        if isinstance(shape, TrafficShape):
            self.run.shape = shape
            self.write_steps(self.run)  # step 0 began before test_start created the directory
        aggregator.observers.append(
            lambda start_s, window_s, endpoints: self.events.window_closed.fire(
                start_s=start_s, end_s=start_s + window_s, endpoints=endpoints
            )
        )
        self.events.run_started.fire(
            run=RunStarted(
                directory.path,
                directory.started_at,
                settings.window_s,
                tuple(models),
                snapshot_now=server.stats.snapshot_now,
                server_delta=compute_delta,
            )
        )
        if settings.open_loop and isinstance(self.environment.runner, MasterRunner):
            self.publish_rate()  # before the spawn messages, so workers start at their share
            self.run.rate_publisher = gevent.spawn(self._publish_rate_loop)

    def _on_step_started(self, step: Step, **_kwargs) -> None:
        run = self.run
        if run is None or run.shape is not self.environment.shape_class:
            return  # step 0 comes before test_start creates the run (start_run writes it)
        try:
            self.begin_step(run, step)
        except Exception:  # a recording problem must not stop the load
            logger.exception("steps.json: could not record step %d", step.index)

    def begin_step(self, run: Run, step: Step) -> None:
        """A load-shape step starts: its boundary in steps.json, and Triton's statistics read
        right there, so each step's server breakdown is exact (not blended from a polling
        interval that spans two steps)."""
        self.write_steps(run)
        if step.index > 0:  # step 0 starts with the run's first snapshot
            run.server.stats.snapshot_now()

    def write_steps(self, run: Run, final: bool = False) -> None:
        """steps.json: the load shape's step boundaries, on the run directory's clock."""
        if run.shape is not None and run.shape.profile is not None and not run.directory.finished:
            run.directory.write_json("steps.json", run.shape.record(relative_to=run.directory.started_at, final=final))

    def _run_loop(self, run: Run) -> None:
        """Every window: merge local data (single process), note users, close old windows."""
        while True:
            gevent.sleep(min(run.aggregator.window_s, RUN_LOOP_S))
            self.wait_for_quiet()
            self._collect_local(run)
            runner = self.environment.runner
            rate = self.total_rate if self.settings.open_loop else None
            run.aggregator.note_users(runner.user_count if runner is not None else 0, rate, users_by_class(runner))
            run.faults.check_workers(
                runner, running=runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING)
            )
            run.aggregator.close_windows()
            if self.settings.open_loop and not run.warned_behind:
                warnings = behind_schedule_warnings(run.aggregator.last_window, " (last window)")
                for warning in warnings:
                    logger.warning(warning.removeprefix("warning: "))
                run.warned_behind = bool(warnings)

    def _collect_local(self, run: Run) -> None:
        # Every process with users drains its own recorder: the single process here, workers into reports.
        if self.is_local:
            run.aggregator.merge(self.recorder.drain())
        run.cpu_s += self.take_cpu()
        if self.is_local:
            run.throttle = add_throttle(run.throttle, self.take_throttle())
        # The master has no users: it follows the workers' slowest through the merged histograms.
        merged_slowest_ms = max((t.histogram.get_max_value() for t in run.aggregator.totals.values()), default=0) / 1000
        self.adapt_stop_grace(max(self.slowest_ms, merged_slowest_ms))

    def live(self) -> LiveSnapshot:
        """The current merged numbers (what the web UI tab and the Prometheus endpoint show)."""
        runner = self.environment.runner
        users = runner.user_count if runner is not None else 0
        workers = len(runner.clients.ready + runner.clients.running) if isinstance(runner, MasterRunner) else 0
        run = self.run
        if run is None:
            if self.finished is not None:
                return replace(self.finished, users=users, workers=workers)
            return LiveSnapshot(users=users, workers=workers)
        return self._snapshot(run, users, workers)

    def _snapshot(self, run: Run, users: int, workers: int, final: bool = False) -> LiveSnapshot:
        """While running: rates and server-side numbers of the latest interval; final: of the whole run."""
        aggregator, snapshots = run.aggregator, run.server.stats.snapshots
        if final:
            duration_s = max((run.directory.stopped_at or time.time()) - run.directory.started_at, 1e-9)
            endpoints = [LiveEndpoint.of(total, total, duration_s) for _, total in sorted(aggregator.totals.items())]
            server = run.server.stats.total_delta()  # what summary.json's `server` says
        else:
            endpoints = [
                LiveEndpoint.of(total, aggregator.last_window.get(name), aggregator.window_s)
                for name, total in sorted(aggregator.totals.items())
            ]
            server = compute_delta(snapshots[-2], snapshots[-1]) if len(snapshots) >= 2 else {}
        return LiveSnapshot(endpoints, server, users, workers, run_dir=str(run.directory.path), final=final)

    def wait_for_final_reports(self, run: Run) -> None:
        """On the master: until every worker that reported has sent its final report (its users
        stopped), or the stop grace and a margin have passed."""
        if run.reports_due_by is None:
            run.reports_due_by = (
                time.monotonic() + (self.environment.stop_timeout or STOP_GRACE_S) + FINAL_REPORT_MARGIN_S
            )
        while not run.faults.workers_done() and time.monotonic() < run.reports_due_by:
            gevent.sleep(0.05)

    def stop_workers(self, run: Run) -> None:
        """On the master, at its test_stop: workers whose users still run (Locust's quit() has not
        told them yet) stop now, and the master waits for their final reports here, while Locust
        still listens to them."""
        runner = self.environment.runner
        if not isinstance(runner, MasterRunner):
            return
        running = {client.id for client in runner.clients.all if client.state in (STATE_SPAWNING, STATE_RUNNING)}
        for worker in running:
            runner.send_message(STOP_MESSAGE, None, client_id=worker)
        run.faults.expect_final_reports(running)
        self.wait_for_final_reports(run)

    def report(self, final: bool) -> dict:
        """A worker's report to the master: its windows since the last one, its CPU and throttling."""
        self.adapt_stop_grace(self.slowest_ms)
        return {
            "windows": self.recorder.drain(),
            "cpu_s": self.take_cpu(),
            "throttle": self.take_throttle(),
            "final": final,
        }

    def send_final_report(self) -> None:
        """On a worker whose users have stopped: everything it recorded, to the master, at once."""
        runner = self.environment.runner
        report = self.report(final=True)
        report["user_count"] = runner.user_count
        try:
            runner.send_message(FINAL_REPORT_MESSAGE, report)
        except RPCError as error:  # the master is gone: it names this worker (or nothing is written)
            logger.warning("final report not sent to the master: %s", error)

    def on_stop_message(self) -> None:
        """On a worker, the master's STOP_MESSAGE: stop the users (test_stop sends the final
        report), or, already stopped, send an (empty) final report again."""
        runner = self.environment.runner
        if runner.state == STATE_STOPPED:
            self.send_final_report()
        else:
            runner.stop()

    def merge_worker_report(self, client_id: str, report: dict, users: int | None) -> None:
        """On the master: one worker's report into the run's totals and fault log."""
        run = self.run
        if run is None:
            if report["windows"]:
                logger.warning("worker %s reported after the run was written: not in its summary", client_id)
            return
        run.aggregator.merge(report["windows"])
        run.faults.worker_reported(client_id, report["windows"], users, final=report.get("final", False))
        run.cpu_s += report["cpu_s"]
        run.throttle = add_throttle(run.throttle, report.get("throttle"))

    def finish_run(self) -> None:
        """Close every window, stop the pollers, write the summary. Idempotent."""
        run, self.run = self.run, None
        if run is None:
            return
        for greenlet in (run.loop, run.rate_publisher):
            if greenlet is not None:
                greenlet.kill(block=False)
        self._collect_local(run)
        run.aggregator.close_windows(final=True, end_s=run.directory.stopped_at or time.time())
        server = run.server.stop(run.directory)
        extra: dict = {"late_worker_windows": run.aggregator.late_messages} if run.aggregator.late_messages else {}
        extra["faults"] = faults = run.faults.to_json(
            run.server.stats.restarts(),
            run.server.stats.errors,
            # Like with like: what reached Triton on both sides (its successes and failures; the
            # client's requests but those refused before any server answered).
            {model: delta["requests"] + delta["failed_requests"] for model, delta in server.items()},
            requests_by_model(run.aggregator.totals),
        )
        path = run.directory.write_summary(
            run.aggregator.totals,
            run.cpu_s,
            server=server,
            extra=extra,
            traffic=self.traffic_json(run),
            throttle=run.throttle,
        )
        run.directory.close()
        self.finished = self._snapshot(run, 0, 0, final=True)
        print(f"Run directory: {path}", flush=True)
        print_exact_summary(run.aggregator.totals, open_loop=self.settings.open_loop)
        print_faults(faults)
        slo_gate.finish(self.environment, path, run.aggregator.totals)  # --slo verdicts, --junit, exit code 3
        self.events.run_finished.fire(path=path, summary=json.loads((path / "summary.json").read_text()))


def requests_by_model(totals: dict) -> dict[str, int]:
    """Per model, over its endpoints (protocols): the client's requests that reached a server
    (connection-level failures left out, as Triton never saw them)."""
    out: dict[str, int] = {}
    for stats in totals.values():
        refused = sum(n for name, n in stats.failures.items() if name in CONNECTION_FAILURES)
        out[stats.model] = out.get(stats.model, 0) + stats.requests - refused
    return out


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
        suite_options.bind_loopback_by_default(parser)

    @events.init.add_listener
    def _on_init(environment: Environment, **kwargs) -> None:
        runtime = bound["runtime"] = runtime_for(environment)
        route_sigint_to_main_greenlet()  # Ctrl-C never lands mid-way through the recording
        if isinstance(environment.runner, MasterRunner):
            # Only the master: it sends no requests, while a process that does would mmap and
            # fault in every large request or response buffer (recording/memory.py).
            return_freed_histograms_to_os()
        options = environment.parsed_options
        if isinstance(environment.runner, WorkerRunner):
            environment.runner.register_message(
                RATE_MESSAGE, lambda msg, **_kw: runtime.receive_rate(RatePlan.from_message(msg.data))
            )
            environment.runner.register_message(STOP_MESSAGE, lambda **_kw: runtime.on_stop_message())
        if isinstance(environment.runner, MasterRunner):
            environment.runner.register_message(
                FINAL_REPORT_MESSAGE,
                lambda msg, **_kw: runtime.merge_worker_report(msg.node_id, msg.data, msg.data.get("user_count")),
            )
        if options is None or isinstance(environment.runner, WorkerRunner):
            return  # workers get their options at test_start
        try:
            runtime.reload_settings()
            install_shape(
                environment,
                kwargs.get("web_ui"),
                runtime.events,
                lambda: settings_from_options(environment.parsed_options),
            )
            runtime.check_traffic()
            # Let a stopping user finish its in-flight request (at most one request timeout):
            # a request Triton counted but the user never reported would break exact counts.
            if not environment.stop_timeout:
                runtime.auto_stop_grace = True
                environment.stop_timeout = STOP_GRACE_S
            slo_gate.validate(runtime)  # a malformed --slo or unknown model: exit 2 before any load
            check_outputs(runtime.settings, str(getattr(options, "junit", "") or ""))  # before, not after, the load
            if options.headless or getattr(options, "autostart", False):
                # (Tests started from the web UI get a new directory each instead.)
                used = used_run_dir_error(runtime.settings.run_dir)
                if used is not None:
                    raise used
                runtime.preflight()
        except StartupError as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)
        if kwargs.get("web_ui") is not None:
            webui.install(kwargs["web_ui"], runtime.live, runtime.check_start)
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
            slo_gate.validate(runtime)  # the web UI may have changed --slo
            if not isinstance(environment.runner, WorkerRunner):
                runtime.check_traffic()  # ... or --traffic and --rate
                check_outputs(runtime.settings, str(getattr(environment.parsed_options, "junit", "") or ""))
        except StartupError as error:
            runtime.fail_startup(error)
            return
        runtime.take_cpu()
        runtime.take_throttle()
        runtime.slowest_ms = 0.0
        if isinstance(environment.runner, WorkerRunner):  # its options (and --stop-timeout) arrive now
            runtime.auto_stop_grace = not getattr(environment.parsed_options, "stop_timeout", 0)
        if not isinstance(environment.runner, WorkerRunner):
            shape = environment.shape_class
            if not (isinstance(shape, TrafficShape) and shape.profile is not None):
                runtime.total_rate = runtime.settings.rate  # a rate shape has set it in its first tick
        if not isinstance(environment.runner, MasterRunner):
            runtime.start_traffic()
        if not isinstance(environment.runner, WorkerRunner):
            runtime.finish_run()  # a previous web-UI run that was never finished
            runtime.start_run()

    @events.test_stop.add_listener
    def _on_test_stop(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        runtime.stop_traffic()  # users have stopped: their in-flight requests are in
        if isinstance(environment.runner, WorkerRunner):
            runtime.send_final_report()
        if runtime.run is not None:
            runtime.run.directory.stopped_at = time.time()
            runtime.events.run_stopping.fire(stopped_at=runtime.run.directory.stopped_at)
            runtime.write_steps(runtime.run, final=True)  # the last step ends at the real stop
        if runtime.is_local:
            runtime.finish_run()
        elif isinstance(environment.runner, MasterRunner) and runtime.run is not None:
            run = runtime.run
            runtime.stop_workers(run)

            def finish_when_workers_reported() -> None:
                runtime.wait_for_final_reports(run)
                if runtime.run is run:
                    runtime.finish_run()

            # Workers send their last windows once their users have stopped; quitting may come first.
            gevent.spawn(finish_when_workers_reported)

    @events.request.add_listener
    def _on_request(
        request_type, name, response_time, response_length=0, exception=None, context=None, **_kwargs
    ) -> None:
        endpoint = (context or {}).get("endpoint")
        runtime = bound.get("runtime")
        if endpoint is None or runtime is None:
            return  # not one of ours
        if exception is None and response_time > runtime.slowest_ms:
            runtime.slowest_ms = response_time
        runtime.recorder.record(
            endpoint,
            name,
            request_type,
            response_time * 1000.0,
            context.get("batch_size", 1),
            str(exception) if exception is not None else None,
            context.get("uncorrected_us"),
            context.get("late", False),
            context.get("request_bytes", 0),
            response_length or 0,
        )

    @events.report_to_master.add_listener
    def _on_report_to_master(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        if runtime is not None:
            runner = runtime.environment.runner
            final = runner is not None and runner.state == STATE_STOPPED  # users stopped: nothing more to come
            data[REPORT_KEY] = runtime.report(final)

    @events.worker_report.add_listener
    def _on_worker_report(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        report = data.get(REPORT_KEY)
        if runtime is not None and report is not None:
            runtime.merge_worker_report(client_id, report, data.get("user_count"))

    @events.quitting.add_listener
    def _on_quitting(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        runner = environment.runner
        if runtime.run is not None and runner is not None and runner.state not in (STATE_STOPPED, STATE_INIT):
            # Ctrl-C: Locust fires quitting before it stops the runner. Stop it first (users
            # finish their in-flight requests, workers send their final reports), so nothing
            # measured is left out of the run directory.
            runner.quit()
        if runtime.run is not None and isinstance(runner, MasterRunner):
            runtime.wait_for_final_reports(runtime.run)
        runtime.finish_run()

    @events.quit.add_listener
    def _on_quit(**_kwargs) -> None:
        runtime = bound.get("runtime")
        if runtime is not None:
            write_final_csv(runtime.environment)  # Locust's --csv holds every request too


def users_by_class(runner) -> dict[str, int] | None:
    """Running users per user class: the master counts its workers' reports (its own
    user_classes_count counts local greenlets, none there); a local runner its greenlets."""
    if runner is None:
        return None
    if hasattr(runner, "reported_user_classes_count"):
        return dict(runner.reported_user_classes_count)
    return dict(runner.user_classes_count)
