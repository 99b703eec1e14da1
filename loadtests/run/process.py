"""The suite's part of one Locust process: created once at init, reached through the Environment.

Holds what the listeners and the users share in this process (the settings of the current
test, the recorder, the prepared endpoints, the open-loop sender) and nothing about a run
being recorded (that is `RunLifecycle`'s). There is one per Environment, stored on it, so
there is no module-level state:

    process = process_of(user.environment)
    process.endpoints.endpoint(GENERIC, "http"), process.settings.open_loop
"""

from __future__ import annotations

import logging
import sys
import time

import gevent
from locust.env import Environment

from loadtests.clients import Connections, TritonClient
from loadtests.clients.control import base_url
from loadtests.config.addresses import TritonTarget
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import Settings
from loadtests.errors import StartupError
from loadtests.events import SuiteEvents
from loadtests.options.reading import settings_from
from loadtests.recording.console import HeldConsole
from loadtests.recording.stalls import StallMeter
from loadtests.recording.throttling import ThrottleMeter
from loadtests.recording.windows import WindowRecorder
from loadtests.run.endpoint_cache import EndpointCache
from loadtests.run.role import Role
from loadtests.tracing.client_log import ClientTraces
from loadtests.tracing.switch import TraceSwitch
from loadtests.traffic.open_loop import OpenLoop
from loadtests.workloads.endpoints import Endpoint, fetch_model
from loadtests.workloads.kinds import WorkloadKind
from loadtests.workloads.mix import MixedEndpoint
from loadtests.workloads.sequences import RunSize, UserSlots
from loadtests.workloads.users import PROCESS_ATTRIBUTE, TritonUser, services_of

logger = logging.getLogger(__name__)


def user_seed(worker_index: int, number: int) -> int:
    """The seed of a process's `number`-th user (1, 2, ...): the worker's index in the high bits.

    Seeding by the user's number alone gave every worker the same streams (the first user of
    each worker drew the same batch sizes and mix picks), so N workers added no variety and
    widened the spread of a mix's shares. A single process (and a worker before the master
    numbered it, index -1) is worker 0, so its seeds stay 1, 2, 3, ...
    """
    return max(worker_index, 0) << 32 | number


class SuiteProcess:
    """The suite's state in one process (one per Environment)."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.events = SuiteEvents()
        self.role = Role.of(environment.runner)
        self.settings = Settings()
        self.recorder = WindowRecorder()
        # --trace-sample: the requests that carried a trace id (loadtests/tracing/client_log.py) and,
        # on the master or single process, Triton's tracing for the run (pre-flight's, at init).
        self.traces = ClientTraces()
        self.trace_switch: TraceSwitch | None = None
        # The users' gRPC connection pools and the replicas of each address: this process's.
        self.connections = Connections()
        self.endpoints = EndpointCache(
            lambda: environment.user_classes, lambda: self.settings, environment.events.request, self.connections
        )
        # The models the users' own tasks name, as Triton describes them: (protocol, name) -> spec.
        self.models: dict[tuple[str, str], ModelSpec] = {}
        # The open-loop sender while a test runs on a process with users (None in closed loop).
        self.sender: OpenLoop | None = None
        # Sequence users' slots (bits of their correlation IDs, loadtests/workloads/sequences.py).
        self.sequence_slots = UserSlots()
        # The workers and users their IDs tell apart, fixed at test start (run/sequence_run.py).
        self.sequence_run: RunSize | None = None
        # Slowest successful request of this process in this test (ms): the stop grace follows it.
        self.slowest_ms = 0.0
        # The check of the current test's options failed: no run, no traffic (the process quits).
        self.rejected: StartupError | None = None
        # Where Triton's statistics are read (pre-flight's choice; None: not asked yet).
        self.statistics_address: TritonTarget | None = None
        # The end-of-run text (held while Locust quits, printed after its own table).
        self.console = HeldConsole()
        self._user_seed = 0
        self._cpu_mark = time.process_time()
        self._throttle = ThrottleMeter()
        self._stalls = StallMeter()

    def reload_settings(self) -> Settings:
        """Settings from the options as they are now; raises SpecError.

        Workers receive their options only at test_start, and the web UI may change them.
        """
        settings = settings_from(self.environment.parsed_options)
        if settings != self.settings:
            self.settings = settings
            self.endpoints.clear()
            self.models.clear()
        self.recorder.window_s = settings.window_s
        self._label_host()
        return settings

    def select_user_classes(self, classes: list[type]) -> None:
        """The user classes the next test runs (the web UI's choice: Locust then runs
        `environment.user_classes`, and pre-flight prepares the same)."""
        self.environment.user_classes = list(classes)
        self._label_host()

    def _label_host(self) -> None:
        classes = self.environment.user_classes
        if self.role.records_run and all(issubclass(cls, TritonUser) for cls in classes):
            # What Locust's web UI shows as "Host": the suite's users ignore Locust's --host.
            # Locust gives environment.host to every class: never with another class beside
            # them (a FastHttpUser's own host stays its own).
            self.environment.host = target_label(self.settings, classes)

    # -- what the users need (loadtests.workloads.users.ProcessServices) ---------------------------------
    def endpoint(self, kind: WorkloadKind, protocol: str) -> Endpoint | MixedEndpoint:
        """The prepared endpoint of a user class (built once per process; raises StartupError)."""
        return self.endpoints.endpoint(kind, protocol)

    def model(self, client: TritonClient, name: str) -> ModelSpec:
        """A model a user's own task names, asked of Triton once per protocol (raises StartupError)."""
        key = (client.protocol, name)
        spec = self.models.get(key)
        if spec is None:
            spec = self.models[key] = fetch_model(client, name)
        return spec

    def record_dropped(self, name: str, model: str, protocol: str) -> None:
        """An open-loop request that was due but not sent (--drop-when-saturated)."""
        self.recorder.record_dropped(name, model, protocol)

    def next_user_seed(self) -> int:
        """A seed for the next user of this process, different from every other user's of the run."""
        self._user_seed += 1
        return user_seed(getattr(self.environment.runner, "worker_index", 0), self._user_seed)

    def fail_startup(self, error: StartupError) -> None:
        """A startup error found during a run (worker, web UI, a task of a user's own): one line,
        exit code 2, stop; once (every user that meets the same mistake reports it)."""
        if self.environment.process_exit_code == error.exit_code:
            return
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

    def take_throttle(self) -> dict[str, int] | None:
        """This container's CPU-throttling counters since the last call (None without a cgroup)."""
        return self._throttle.take()

    def take_stalls(self) -> list[tuple[float, float]]:
        """This process's stalls (from, to; Unix s) since the last call; the first call starts
        watching (loadtests/recording/stalls.py)."""
        self._stalls.start()
        return self._stalls.take()


def target_label(settings: Settings, user_classes: list[type]) -> str:
    """The Triton addresses the selected classes load, as the web UI's header shows them:
    'http://10.0.0.5:8000', 'grpc://10.0.0.5:8001', or both when classes of both protocols run."""
    protocols = {getattr(cls, "protocol", "") for cls in user_classes}
    http, grpc = settings.triton_http, settings.triton_grpc
    labels = {
        "http": base_url(http.control_address_of(http.first)),
        "grpc": grpc.control_address_of(grpc.first),
    }
    return ", ".join(label for protocol, label in labels.items() if protocol in protocols) or labels["http"]


def process_of(environment: Environment) -> SuiteProcess:
    """The suite's process object of an Environment (set up by `loadtests.run.install`)."""
    return services_of(environment)  # type: ignore[return-value]  (the wiring stores a SuiteProcess)


def attach_process(environment: Environment) -> SuiteProcess:
    """Create the process object for an Environment at init (once)."""
    process = SuiteProcess(environment)
    setattr(environment, PROCESS_ATTRIBUTE, process)
    return process
