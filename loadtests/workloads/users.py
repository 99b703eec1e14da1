"""Locust users that send Triton inference traffic, one class per workload and protocol.

All eight share `TritonUser`; they differ only in two class attributes, `kind` (the
`WorkloadKind` of loadtests/workloads/kinds.py: what the payload is, how its model is named
and checked) and `protocol` (which client sends it). The two sequence users
(`TritonSequenceUser`) send sequences of requests instead of a pool's bodies
(loadtests/workloads/sequences.py).

Every class here is abstract: they are the bases a user's locustfile imports (`from loadtests
import TritonHttpUser`; Locust would run every non-abstract User class a locustfile imports).
The suite's locustfile (loadtests/locustfile.py) declares their concrete twins, which run the
workload (a class with no task of its own, see `TritonUser`); a user's subclass with tasks of its own
runs those, sending through `self.client` (task_client.py):

    locust -f locustfile.py --headless -u 8 -t 1m BertQAHttpUser ResNetGrpcUser
    locust -f locustfile.py --headless -u 4 -t 30s TritonGrpcUser --model identity --shape INPUT0:16

Closed loop (--traffic closed, the default): each user opens one connection in
on_start and closes it in on_stop, and sends back-to-back requests (perf_analyzer's
concurrency mode) until Locust stops it (the request in flight always finishes). After a failure
that means no server is there (Triton not listening, or stopping) it pauses, 1 ms doubling up to
100 ms (`ConnectionBackoff`), so that an outage is measured, not hammered.

Open loop (--traffic constant|poisson|gamma --rate R), the built-in workload: the process's users take turns to
wait for the next intended send time of its schedule and send each request on a
greenlet of their own (kept and reused, traffic/senders.py), so requests go out on time however slow the responses are
(loadtests/traffic/open_loop.py). Users then only dispatch: the rate, not the user
count, sets the load, and in-flight requests are capped by --max-in-flight.

Either way each request's batch size comes from --batch-size and its body from a pool
built before the first request (sequence users: batch size 1, closed loop only). With --mix,
the generic users' requests each choose their model by weight first (loadtests/workloads/mix.py),
in closed and open loop alike.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import gevent
from locust import User, constant
from locust.user.task import LOCUST_STATE_STOPPING

from loadtests.clients import STREAMING, Connections, TritonClient, open_client
from loadtests.clients.failures import backs_off
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import Settings
from loadtests.errors import StartupError
from loadtests.traffic.open_loop import OpenLoop
from loadtests.traffic.senders import SenderPool
from loadtests.workloads.endpoints import Endpoint
from loadtests.workloads.kinds import BERT_QA, GENERIC, RESNET, SEQUENCE, WorkloadKind
from loadtests.workloads.mix import MixedEndpoint
from loadtests.workloads.sequences import IdLayout, RunSize, SequenceIds, SequenceSender, UserSlots
from loadtests.workloads.task_client import TaskArrivals, TaskClient

# The attribute of Locust's Environment through which the run wiring (loadtests/run/process.py)
# hands the users what they need from their process: the users name what they need
# (`ProcessServices`), not who provides it, so they sit below the wiring.
PROCESS_ATTRIBUTE = "triton_loadtest"


class ProcessServices(Protocol):
    """What a user needs from its process (the run wiring's `SuiteProcess` provides it)."""

    settings: Settings
    sender: OpenLoop | None  # the open-loop sender while a test runs (None in closed loop)
    sequence_slots: UserSlots  # sequence users' slots in this process (their correlation IDs)
    sequence_run: RunSize | None  # the workers and users the IDs tell apart (None: not known yet)
    connections: Connections  # the process's gRPC pools and replica sets

    def endpoint(self, kind: WorkloadKind, protocol: str) -> Endpoint | MixedEndpoint: ...

    def model(self, client: TritonClient, name: str) -> ModelSpec:
        """A model as Triton describes it, asked once per process and protocol (raises StartupError)."""
        ...

    def next_user_seed(self) -> int: ...

    def fail_startup(self, error: StartupError) -> None: ...

    def record_dropped(self, name: str, model: str, protocol: str) -> None: ...


def services_of(environment) -> ProcessServices:
    """The process's services for the users of an Environment (set at Locust's init)."""
    services = getattr(environment, PROCESS_ATTRIBUTE, None)
    if services is None:
        raise LookupError("loadtests.run.install(events) was not called for this Environment (see locustfile.py)")
    return services


# A closed-loop user lets the rest of the process run at least this often. A request whose answer
# is already there when the user reads it never blocks, so without it a user could send request
# after request without a single switch: on a busy 2-core host (Triton answering on the other
# core) one user held the loop for 6.5 s, and the load shape's next step, the window closing,
# the other users and the master's heartbeats all waited for it.
TURN_S = 0.005


class LoopTurn:
    """Gives the process's gevent loop a turn once `every_s` has passed since the last one."""

    def __init__(self, every_s: float = TURN_S, clock: Callable[[], float] = time.perf_counter) -> None:
        self.every_s = every_s
        self._clock = clock
        self._since = clock()

    def take(self) -> None:
        """Between two requests: a turn for the other greenlets if this one has run `every_s`."""
        if self._clock() - self._since >= self.every_s:
            gevent.sleep(0)
            self._since = self._clock()


# A closed-loop user's pause after a failure that means no server is there (ConnectionBackoff).
FIRST_PAUSE_S = 0.001
MAX_PAUSE_S = 0.100


@dataclass
class ConnectionBackoff:
    """A closed-loop user's pause after a failure that means no server is there to measure.

    While Triton refuses connections (killed, restarting, not yet listening) or is going away (it
    unloads its models when it stops), a closed-loop user would otherwise fail, retry and fail
    again as fast as the CPU allows: measured before this pause, 1,800-2,100 failed requests/s per
    user, burning the worker's CPU and flooding the failure table (a stopping Triton: 36,000 "not
    found" answers in a second). Each consecutive such failure (its class `backs_off`, see
    clients/failures.py) doubles the pause, from 1 ms up to 100 ms; any other outcome (a success,
    an overloaded or invalid request, a timeout) resets it. Overload is never backed off: it is
    what the test measures. The failures are still sent and counted: the outage is measured, just
    not hammered.

        backoff = ConnectionBackoff()
        failure = client.infer(...)
        gevent.sleep(backoff.after(failure))  # 0.0 after a success
    """

    first_s: float = FIRST_PAUSE_S
    max_s: float = MAX_PAUSE_S
    _next_s: float = 0.0

    def after(self, failure: Exception | None) -> float:
        """The pause before the next request, given how the last one ended."""
        if failure is None or not backs_off(str(failure)):
            self._next_s = 0.0
            return 0.0
        pause = self._next_s or self.first_s
        self._next_s = min(pause * 2, self.max_s)
        return pause


def run_workload(user: TritonUser) -> None:
    """The task of a class with no task of its own: the suite's workload on its endpoint."""
    user.send_requests()


class TritonUser(User):
    """Base class: one Triton client per user.

    A subclass with tasks of its own (Locust's @task, `tasks = [...]`, TaskSets) runs only those,
    each sending through `self.client` (a `TaskClient`: `self.client.infer(model, inputs)`), with
    its `wait_time` between them. A concrete subclass with none runs the suite's workload on its
    endpoint (the built-in classes of loadtests/locustfile.py: requests from the endpoint's
    prepared pool, back to back, `--model` and the options choose them).
    """

    abstract = True
    kind: ClassVar[WorkloadKind | None] = None  # the table's entry (loadtests/workloads/kinds.py)
    protocol: ClassVar[str] = ""
    wait_time = constant(0)
    # True for a class that runs the suite's workload (it has no task of its own, see above).
    runs_workload: ClassVar[bool] = False

    endpoint: Endpoint | MixedEndpoint  # a mix's (--mix) picks each request's model by weight
    client: TritonClient | TaskClient | None = None
    process: ProcessServices

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # Locust gives a class its bases' tasks too: the workload's task of a built-in base is
        # dropped from a subclass that has tasks of its own (they run alone, as Locust's do).
        own = [t for t in cls.tasks if t is not run_workload]
        cls.runs_workload = not own and not cls.abstract
        cls.tasks = [run_workload] if cls.runs_workload else own

    def on_start(self) -> None:
        process = self.process = services_of(self.environment)
        if not self.runs_workload:
            connection = open_client(
                self.protocol, process.settings, self.environment.events.request, process.connections
            )
            connection.warm()  # connect now, not inside the first timed request
            arrivals = TaskArrivals(process.sender, self._stopping) if process.sender is not None else None
            self.client = TaskClient(connection, process.model, process.fail_startup, arrivals)
            if arrivals is not None:
                self.wait_time = arrivals.wait  # open loop: the schedule starts each task execution
                arrivals.wait()  # ... the first one too
            return
        try:
            self.endpoint = process.endpoint(self.kind, self.protocol)
        except StartupError as error:
            process.fail_startup(error)
            self.stop(force=True)
            return
        # A decoupled model's requests are streamed, each by its own call: ModelStreamInfer
        # (clients/grpc_stream.py) or generate_stream (clients/http_stream.py). Pre-flight
        # refuses decoupled models on any other path.
        streams = getattr(self.endpoint, "streams", False)
        self.client_protocol = STREAMING[self.protocol] if streams else self.protocol
        events = self.environment.events
        client = open_client(self.client_protocol, process.settings, events.request, process.connections)
        client.warm()  # connect now, not inside the first timed request
        if process.sender is None:
            self.client = client
        else:
            # Open loop: the connection goes to the process's pool, connected here rather
            # than in a due request's send path (where it would make that request late).
            process.sender.clients.checkin(client, self.client_protocol)
        self.rng = random.Random(process.next_user_seed())  # not numpy's: see Endpoint.pick

    def send_requests(self) -> None:
        # One task that loops, instead of one task per request: between tasks Locust marks a
        # user "waiting", and a graceful stop kills a waiting user with an asynchronous kill
        # that can land in the *next* request (seen as GreenletExit mid-request under load).
        # Inside this loop the user stays "running", so a stop lets the request in flight
        # finish; the loop ends when Locust marks the user "stopping".
        traffic = self.process.sender
        if traffic is not None:
            self._open_loop(traffic)
            return
        backoff, turn = ConnectionBackoff(), LoopTurn()
        while not self._stopping():
            failure = self.client.infer(self.endpoint.pick(self.rng), self.endpoint.validator)
            pause = backoff.after(failure)
            if pause:
                gevent.sleep(pause)  # the server refuses connections: count the outage, do not spin
            else:
                turn.take()

    def _stopping(self) -> bool:
        return self._state == LOCUST_STATE_STOPPING

    def _open_loop(self, traffic: OpenLoop) -> None:
        sends = SenderPool()  # reused greenlets: spawning one per request cost ~20 µs each
        try:
            while not self._stopping():
                due_ns = traffic.next_due(self._stopping)
                if due_ns is None:
                    continue
                request = self.endpoint.pick(self.rng)
                if not traffic.acquire_slot():
                    self.process.record_dropped(request.endpoint, request.model, self.protocol)
                    continue
                if self._stopping():  # the stop came while this user waited for a slot
                    traffic.release_slot()
                    break
                sends.submit(self._send_open_loop, traffic, request, due_ns)
            sends.join()  # a stopping user lets its requests in flight finish
        except BaseException:
            # Killed at the end of the stop grace (or Ctrl-C): requests still in flight are cut
            # now and reported as "interrupted", not left to report after the run has ended.
            sends.kill()
            raise

    def _send_open_loop(self, traffic: OpenLoop, request, due_ns: int) -> None:
        try:
            client = traffic.clients.checkout(self.client_protocol)
            try:
                client.infer(request, self.endpoint.validator, intended_ns=due_ns)
            finally:
                traffic.clients.checkin(client, self.client_protocol)
        finally:
            traffic.release_slot()

    def on_stop(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()


class TritonSequenceUser(TritonUser):
    """Base class: sequences of --sequence-length requests to a sequence model (--model), each
    with its correlation ID and start/end flags, every response checked against the running
    sum (loadtests/workloads/sequences.py); closed loop, batch size 1."""

    abstract = True
    kind = SEQUENCE
    sequences: SequenceSender | None = None
    _slot: int | None = None

    def on_start(self) -> None:
        super().on_start()
        if self.client is None or not self.runs_workload:
            return  # pre-flight failed (the test is stopping), or the class's own tasks send
        process = self.process
        # Locust's master numbers its workers 0, 1, 2, ...; a single process is worker 0.
        worker = getattr(self.environment.runner, "worker_index", 0)
        try:
            if worker < 0:
                raise StartupError("this worker has no index from the master yet: sequence IDs cannot be assigned")
            self._slot = process.sequence_slots.acquire()
            layout = IdLayout.of(self.endpoint.model.correlation_id_type, process.sequence_run)
            ids = SequenceIds(layout, worker, self._slot)
        except StartupError as error:
            process.fail_startup(error)
            self.stop(force=True)
            return
        self.sequences = SequenceSender(
            self.client,
            self.endpoint,
            ids,
            process.settings.sequence_length,
            self.rng,
            self._stopping,
        )

    def send_requests(self) -> None:
        # One task that loops (see TritonUser.send_requests); a stop mid-sequence ends that sequence
        # with its next request (flagged end), counted as ended early.
        backoff, turn = ConnectionBackoff(), LoopTurn()
        while self.sequences is not None and not self._stopping():
            pause = backoff.after(self.sequences.run_one())
            if pause:
                gevent.sleep(pause)
            else:
                turn.take()

    def on_stop(self) -> None:
        if self._slot is not None:
            self.process.sequence_slots.release(self._slot)
            self._slot = None
        super().on_stop()


class TritonSequenceHttpUser(TritonSequenceUser):
    """Sequences to a sequence model (--model) over HTTP: correlation IDs, start/end flags, sums checked."""

    abstract = True
    protocol = "http"


class TritonSequenceGrpcUser(TritonSequenceUser):
    """Sequences to a sequence model (--model) over gRPC: correlation IDs, start/end flags, sums checked."""

    abstract = True
    protocol = "grpc"


class BertQAHttpUser(TritonUser):
    """BERT-QA question/context pairs over HTTP (default model bert_qa_dynbatch)."""

    abstract = True
    kind = BERT_QA
    protocol = "http"


class BertQAGrpcUser(TritonUser):
    """BERT-QA question/context pairs over gRPC (default model bert_qa_dynbatch)."""

    abstract = True
    kind = BERT_QA
    protocol = "grpc"


class ResNetHttpUser(TritonUser):
    """Real images, resized and normalised for a ResNet-style model, over HTTP (default resnet50)."""

    abstract = True
    kind = RESNET
    protocol = "http"


class ResNetGrpcUser(TritonUser):
    """Real images, resized and normalised for a ResNet-style model, over gRPC (default resnet50)."""

    abstract = True
    kind = RESNET
    protocol = "grpc"


class TritonHttpUser(TritonUser):
    """Any model (--model), inputs from its metadata or a perf_analyzer --input-data file, over HTTP."""

    abstract = True
    kind = GENERIC
    protocol = "http"


class TritonGrpcUser(TritonUser):
    """Any model (--model), inputs from its metadata or a perf_analyzer --input-data file, over gRPC."""

    abstract = True
    kind = GENERIC
    protocol = "grpc"


__all__ = [
    "BertQAGrpcUser",
    "BertQAHttpUser",
    "ResNetGrpcUser",
    "ResNetHttpUser",
    "TritonGrpcUser",
    "TritonHttpUser",
    "TritonSequenceGrpcUser",
    "TritonSequenceHttpUser",
    "TritonSequenceUser",
    "TritonUser",
]
