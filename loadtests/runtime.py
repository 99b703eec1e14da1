"""Wires the suite into one Locust Environment: settings, endpoints, recording, run directory.

Listeners (registered by `install(events)` from the locustfile):
- init_command_line_parser: the suite's options;
- init: on a standalone or master process in headless mode, the pre-flight of every
  selected user class, so bad input exits with code 2 before any load is sent;
- test_start: settings re-read (workers receive options only now, and the web UI
  may have changed them);
- request: every request recorded in the exact per-endpoint histograms;
- report_to_master / worker_report: workers ship their histograms, the master merges;
- quitting: the master or standalone process writes the run directory.
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
from locust.runners import WorkerRunner

from loadtests import options as suite_options
from loadtests.clients import open_client
from loadtests.endpoints import Endpoint, model_name_for, prepare_endpoint
from loadtests.errors import StartupError
from loadtests.recording.histograms import Recorder
from loadtests.recording.run_dir import RunDirectory

logger = logging.getLogger(__name__)
REPORT_KEY = "triton_loadtest"


@dataclass
class Runtime:
    """The suite's state for one Environment (one per process)."""

    environment: Environment
    settings: suite_options.Settings = field(default_factory=suite_options.Settings)
    recorder: Recorder = field(default_factory=Recorder)
    endpoints: dict[tuple[str, str], Endpoint] = field(default_factory=dict)
    run_directory: RunDirectory | None = None
    # CPU seconds this process and (on the master) its workers spent since test start:
    # the load generator's cost, for sizing workers and for `make bench`.
    cpu_s: float = 0.0
    _cpu_mark: float = field(default_factory=time.process_time)
    _locks: dict[tuple[str, str], Semaphore] = field(default_factory=dict)
    _user_seed: int = 0

    def take_cpu(self) -> float:
        """CPU seconds of this process since the last call (or since test start)."""
        now = time.process_time()
        spent, self._cpu_mark = now - self._cpu_mark, now
        return spent

    def reload_settings(self) -> None:
        settings = suite_options.Settings.from_options(self.environment.parsed_options)
        if settings != self.settings:
            self.settings = settings
            self.endpoints.clear()

    def kinds_in_run(self) -> set[str]:
        return {cls.workload for cls in self.environment.user_classes if getattr(cls, "workload", None)}

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


_runtimes: weakref.WeakKeyDictionary[Environment, Runtime] = weakref.WeakKeyDictionary()


def runtime_for(environment: Environment) -> Runtime:
    runtime = _runtimes.get(environment)
    if runtime is None:
        runtime = _runtimes[environment] = Runtime(environment)
    return runtime


def install(events) -> None:
    """Register the suite's listeners on Locust's events (call once, from the locustfile)."""
    # Request and report events carry no environment; Locust runs one per process,
    # bound here at init.
    bound: dict[str, Runtime] = {}

    @events.init_command_line_parser.add_listener
    def _add_options(parser, **_kwargs) -> None:
        suite_options.add_arguments(parser)

    @events.init.add_listener
    def _on_init(environment: Environment, **_kwargs) -> None:
        runtime = bound["runtime"] = runtime_for(environment)
        options = environment.parsed_options
        if options is None or isinstance(environment.runner, WorkerRunner):
            return  # workers get their options at test_start
        try:
            runtime.reload_settings()
            # Let a stopping user finish its in-flight request (at most one request timeout):
            # a request Triton counted but the user never reported would break exact counts.
            if not environment.stop_timeout:
                environment.stop_timeout = runtime.settings.request_timeout_s
            if options.headless or getattr(options, "autostart", False):
                runtime.preflight()
        except StartupError as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)

    @events.test_start.add_listener
    def _on_test_start(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        try:
            runtime.reload_settings()
        except StartupError as error:
            runtime.fail_startup(error)
            return
        runtime.take_cpu()
        runtime.cpu_s = 0.0
        if not isinstance(environment.runner, WorkerRunner):
            runtime.recorder.reset()
            runtime.run_directory = RunDirectory.create(environment, runtime.settings)

    @events.request.add_listener
    def _on_request(request_type, name, response_time, exception=None, context=None, **_kwargs) -> None:
        context = context or {}
        endpoint = context.get("endpoint")
        if endpoint is None:
            return  # not one of ours
        runtime = bound.get("runtime")
        if runtime is None:
            return
        failure = str(exception) if exception is not None else None
        runtime.recorder.record(
            endpoint, name, request_type, response_time * 1000.0, context.get("batch_size", 1), failure
        )

    @events.report_to_master.add_listener
    def _on_report_to_master(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        if runtime is not None:
            data[REPORT_KEY] = {"endpoints": runtime.recorder.drain(), "cpu_s": runtime.take_cpu()}

    @events.worker_report.add_listener
    def _on_worker_report(client_id, data, **_kwargs) -> None:
        runtime = bound.get("runtime")
        if runtime is not None and REPORT_KEY in data:
            runtime.recorder.merge_messages(data[REPORT_KEY]["endpoints"])
            runtime.cpu_s += data[REPORT_KEY]["cpu_s"]

    @events.quitting.add_listener
    def _on_quitting(environment: Environment, **_kwargs) -> None:
        runtime = runtime_for(environment)
        if isinstance(environment.runner, WorkerRunner) or runtime.run_directory is None:
            return
        runtime.cpu_s += runtime.take_cpu()
        path = runtime.run_directory.write(runtime.recorder, runtime.cpu_s)
        print(f"Run directory: {path}", flush=True)
        _print_exact_summary(runtime.recorder)


def _print_exact_summary(recorder: Recorder) -> None:
    if not recorder.endpoints:
        return
    header = f"{'Endpoint':<32} {'reqs':>8} {'fails':>6} {'infer':>8} {'p50 ms':>10} {'p90 ms':>10} {'p99 ms':>10}"
    lines = ["Exact latencies (HdrHistogram, microsecond precision):", header]
    for stats in recorder.endpoints.values():
        latency = stats.latency_summary_us()
        lines.append(
            f"{stats.name:<32} {stats.requests:>8} {stats.failure_count:>6} {stats.inferences:>8} "
            f"{latency['p50'] / 1000:>10.3f} {latency['p90'] / 1000:>10.3f} {latency['p99'] / 1000:>10.3f}"
        )
    print("\n".join(lines), flush=True)
