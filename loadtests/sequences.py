"""Sequences of requests to a stateful model, each response checked against the running sum.

A sequence user (users.py, `TritonSequenceHttpUser`/`TritonSequenceGrpcUser`) sends one
sequence after another: N requests (N drawn per sequence from --sequence-length) with one
correlation ID (sequence_ids.py), the first flagged start, the last end. Each request
carries a small random integer; the model returns the sum of its sequence so far (the test
repository's `accumulator`), and each response must equal the sum this user sent. A wrong
sum is the failure "sequence state": another client's requests reached this sequence's state
(a correlation-ID collision), or the server lost it.

How a sequence ends:
- completed: its N requests all succeeded and every sum was right;
- failed: a request failed (any failure name); the sequence is closed at once with one more
  request flagged end (value 0, not checked, counted as a request but not as a sequence), so
  that Triton frees its slot now instead of after `max_sequence_idle_microseconds`. Not when
  the server cannot be reached (that END would fail too: Triton's idle timeout releases it)
  nor when the server refused the sequence's first request (no sequence was opened);
- ended early: the test stopped mid-sequence; its next request carries end, is checked, and
  the sequence counts as ended early rather than completed.

Requests are built one by one before each is timed (the ID, flags and value change every
time); the clients' `infer` times the request alone, as for every user.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from loadtests.batch_size import BatchSizeSpec
from loadtests.clients import PreparedRequest, RequestFailure, TritonClient
from loadtests.clients.base import SequenceStep
from loadtests.endpoints import Endpoint
from loadtests.sequence_ids import SequenceIds

SEQUENCE_STATE = "sequence state"
# Values sent are 1..9: a sequence of a million requests still sums within INT32.
LOWEST_VALUE, HIGHEST_VALUE = 1, 9


def sequence_request(
    client: TritonClient, endpoint: Endpoint, step: SequenceStep, value: int, expected_sum: int | None
) -> PreparedRequest:
    """One step of a sequence on the wire; `expected_sum` is what the response must hold (None: unchecked)."""
    model = endpoint.model
    tensor = model.inputs[0]
    shape = (1, 1) if model.batches else (1,)
    wire = client.prepare(model, {tensor.name: np.full(shape, value, tensor.numpy_dtype)}, endpoint.name, 1, step)
    expected = None if expected_sum is None else {model.outputs[0].name: (np.array([expected_sum]),)}
    return PreparedRequest(
        endpoint=endpoint.name,
        model=model.name,
        batch_size=1,
        wire=wire,
        expected=expected,
        request_bytes=client.wire_bytes(wire),
        sequence=step,
    )


def check_running_sum(outputs: dict[str, np.ndarray], datatypes: dict[str, str], request: PreparedRequest) -> None:
    """The response's one value against the sum sent so far; raises RequestFailure("sequence state")."""
    if not request.expected:
        return
    ((name, (wanted,)),) = request.expected.items()
    got = outputs.get(name)
    if got is None or got.size != 1 or int(got.reshape(-1)[0]) != int(wanted[0]):
        shown = "missing" if got is None else got.reshape(-1)[:4].tolist()
        step = request.sequence
        where = f"sequence {step.correlation_id:#x}" if step is not None else "sequence"
        raise RequestFailure(SEQUENCE_STATE, f"{where}: {name} is {shown}, the values sent sum to {int(wanted[0])}")


def _may_be_open(step: SequenceStep, failure: RequestFailure) -> bool:
    """Whether Triton may still hold the failed sequence (then it is closed with an END)."""
    if not failure.failure_class.sent or failure.failure_class.backs_off:
        return False  # unreachable or going away: an END would fail too; the idle timeout releases it
    refused = bool(failure.code)  # the server answered with a status
    return not (step.start and refused)


class SequenceSender:
    """Sends one user's sequences over its client (one at a time, closed loop)."""

    def __init__(
        self,
        client: TritonClient,
        endpoint: Endpoint,
        ids: SequenceIds,
        lengths: BatchSizeSpec,
        rng: random.Random,
        stopping: Callable[[], bool],
    ) -> None:
        self.client = client
        self.endpoint = endpoint
        self.ids = ids
        self.lengths = lengths
        self.rng = rng
        self.stopping = stopping

    def run_one(self) -> RequestFailure | None:
        """One whole sequence; returns the failure that ended it (None if it completed or ended early)."""
        length = self.lengths.sample(self.rng)
        correlation_id = self.ids.next()
        total = 0
        for index in range(length):
            last = index == length - 1
            early = not last and self.stopping()
            value = self.rng.randint(LOWEST_VALUE, HIGHEST_VALUE)  # both ends included
            total += value
            step = SequenceStep(correlation_id, start=index == 0, end=last or early, early=early)
            request = sequence_request(self.client, self.endpoint, step, value, total)
            failure = self.client.infer(request, check_running_sum)
            if failure is not None:
                if not step.end and _may_be_open(step, failure):
                    self._close(correlation_id)
                return failure
            if step.end:
                break
        return None

    def _close(self, correlation_id: int) -> None:
        step = SequenceStep(correlation_id, start=False, end=True, recovery=True)
        self.client.infer(sequence_request(self.client, self.endpoint, step, 0, None))
