"""`self.client` of a user class with tasks of its own: one request per call, counted by the suite.

    class Journey(TritonHttpUser):
        wait_time = between(0.5, 1)

        @task
        def ask(self):
            answer = self.client.infer("identity", {"INPUT0": np.ones((1, 16), np.float32)})
            if answer.ok:
                answer.as_numpy("OUTPUT0")

`inputs` maps input names to numpy arrays (the batch dimension included where the model
batches), or is a list of tritonclient `InferInput`s (HTTP or gRPC), so tritonclient code ports
over. Each request goes through the user's connection (`clients/`: timed alone, failures named,
reported through Locust's request event with its `RequestOutcome`) under `name` (default the
suite's endpoint name, "<model> [<protocol>]"). The model's description is asked of Triton
once per process; the body is serialised on every call: `prepare()` once and `infer(prepared)`
in a hot loop.

In open loop (--traffic constant|poisson|gamma --rate R) the schedule starts the task executions
(`TaskArrivals`, as k6's arrival-rate executors start iterations): the user's `wait_time` is the
wait for the next due time of the process's schedule, and the execution's first request is timed
from that time (its latency corrected for coordinated omission, counted late when it went out
more than 1 ms after it). The users are the executions in flight: a due time that finds every
user busy goes out late, with the first free user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gevent
import numpy as np
from locust.exception import StopUser
from tritonclient.utils import deserialize_bytes_tensor, triton_to_np_dtype

from loadtests.clients import PreparedRequest, RequestFailure, TritonClient
from loadtests.config.model_spec import ModelSpec
from loadtests.errors import ModelMismatchError, StartupError
from loadtests.traffic.open_loop import OpenLoop
from loadtests.workloads.endpoints import check_inputs_fit

Inputs = Mapping[str, np.ndarray] | Sequence[Any]


class Answer:
    """What one `infer` call got: `ok`, the `failure` it was counted with, and the outputs
    (decoded on first use)."""

    def __init__(self, connection: TritonClient, response: Any, failure: RequestFailure | None) -> None:
        self.failure = failure
        self._connection = connection
        self._response = response
        self._outputs: dict[str, np.ndarray] | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Output name -> array (empty for a failed request)."""
        if self._outputs is None:
            decoded = self._connection.outputs(self._response) if self._response is not None else ({}, {})
            self._outputs = decoded[0]
        return self._outputs

    def as_numpy(self, name: str) -> np.ndarray | None:
        """One output, as tritonclient's InferResult.as_numpy gives it (None if absent)."""
        return self.outputs.get(name)


class TaskArrivals:
    """Open loop over a user's own tasks: each task execution starts at a due time of the process's
    schedule; `wait` is the user's wait_time, `take` the intended time of the execution's first request."""

    def __init__(self, sender: OpenLoop, stopping: Callable[[], bool]) -> None:
        self.sender = sender
        self.stopping = stopping
        self._intended_ns: int | None = None

    def wait(self) -> float:
        """Until the next due time this user takes (0 s left to wait: the next task starts now)."""
        self._intended_ns = None
        while not self.stopping():
            due = self.sender.next_due(self.stopping)
            if due is not None:
                self._intended_ns = due
                break
        return 0.0

    def take(self) -> int | None:
        """The due time of the execution under way, for its first request only (then None)."""
        due, self._intended_ns = self._intended_ns, None
        return due


class TaskClient:
    """One user's client for its own tasks (see the module docstring)."""

    def __init__(
        self,
        connection: TritonClient,
        models: Callable[[TritonClient, str], ModelSpec],
        refuse: Callable[[StartupError], None],
        arrivals: TaskArrivals | None = None,
    ) -> None:
        self.connection = connection
        self.protocol = connection.protocol
        self._models = models
        self._refuse = refuse  # a request that cannot be built: one error line, exit code 2, the test stops
        self._arrivals = arrivals  # open loop: the schedule's due times (None: closed loop)

    def prepare(self, model: str, inputs: Inputs, name: str | None = None) -> PreparedRequest:
        """The request's body built once, to send with `infer(prepared)` as often as wanted;
        a model Triton does not have, or inputs that do not fit it, are refused as bad input (one
        `error:` line, exit code 2, the test stopped: the same mistake fails every call alike) and
        this user stops."""
        try:
            spec = self._models(self.connection, model)
            if spec.decoupled:
                raise ModelMismatchError(f"model '{model}' is decoupled: the built-in TritonGrpcUser streams it")
            arrays = as_arrays(inputs)
            first = next(iter(arrays.values()), None)
            batch_size = first.shape[0] if spec.batches and first is not None and first.ndim else 1
            check_inputs_fit(spec, arrays, batch_size)
        except StartupError as error:
            self._refuse(error)
            raise StopUser from None
        endpoint = name or f"{model} [{self.protocol}]"
        wire = self.connection.prepare(spec, arrays, endpoint, batch_size)
        return PreparedRequest(endpoint, model, batch_size, wire, request_bytes=self.connection.wire_bytes(wire))

    def infer(self, model: str | PreparedRequest, inputs: Inputs | None = None, name: str | None = None) -> Answer:
        """Send one request and count it; its failure is counted, not raised."""
        request = model if isinstance(model, PreparedRequest) else self.prepare(model, inputs or {}, name)
        # Locust stops a user that is waiting between tasks by killing it, asynchronously: the
        # kill can arrive after the user has started its next task. Yielding once here lets such
        # a kill land before the request goes out, never in the middle of it (where the request
        # would be cut and counted "interrupted"); a running user's stop waits for its request.
        gevent.sleep(0)
        kept: list[Any] = []
        intended_ns = self._arrivals.take() if self._arrivals is not None else None
        failure = self.connection.infer(request, intended_ns=intended_ns, on_response=kept.append)
        return Answer(self.connection, kept[0] if kept else None, failure)

    def close(self) -> None:
        self.connection.close()


def as_arrays(inputs: Inputs) -> dict[str, np.ndarray]:
    """Input name -> array, from a dict of arrays or from tritonclient InferInputs."""
    if isinstance(inputs, Mapping):
        return {name: np.asarray(array) for name, array in inputs.items()}
    return {tensor.name(): _infer_input_array(tensor) for tensor in inputs}


def _infer_input_array(tensor: Any) -> np.ndarray:
    """The data a tritonclient InferInput (HTTP or gRPC) was given with set_data_from_numpy."""
    shape, datatype = [int(d) for d in tensor.shape()], tensor.datatype()
    binary = getattr(tensor, "_get_binary_data", None) or getattr(tensor, "_get_content", None)
    raw = binary() if binary is not None else None
    listed = getattr(tensor, "_data", None)  # HTTP's JSON tensor (binary_data=False)
    if raw is None and listed is not None:
        return np.array(listed, dtype=triton_to_np_dtype(datatype)).reshape(shape)
    if raw is None:
        raise ModelMismatchError(
            f"input '{tensor.name()}' has no data (set_data_from_numpy; shared memory is not sent)"
        )
    if datatype == "BYTES":
        return deserialize_bytes_tensor(raw).reshape(shape)
    return np.frombuffer(raw, dtype=triton_to_np_dtype(datatype)).reshape(shape)
