"""Correlation IDs for sequence users: disjoint across workers and across users, never 0.

Triton keeps one state per correlation ID, so two generators that send the same ID at once
corrupt each other's sequences (triton-inference-server/server#3103). Every ID is built
from three numbers, each in its own bits: the worker's index (Locust's runner.worker_index,
0 in a single process), the user's slot in its worker (the lowest free one, released when
the user stops) and that user's sequence number (1, 2, ..., then 1 again; never 0, so no
ID is 0). Where the bits go depends on what the model keeps of the ID (`IdLayout.of`):

- a 64-bit CORRID control (TYPE_UINT64, TYPE_INT64) or none: a fixed layout, 31 bits of
  worker index (bits 62..32), 16 of user slot, 16 of sequence number; bit 63 stays 0, so
  the ID fits the signed `int64_param` tritonclient sends over gRPC too;
- a 32-bit CORRID (TYPE_UINT32; TYPE_INT32 keeps its sign bit 0): Triton copies only the
  ID's low 32 bits into the control, so the worker index and the slot get the bits the
  run needs (`RunSize`: the worker indexes in use and the users one worker can hold) and
  the sequence number the rest, at least MIN_SEQUENCE_BITS, else the run is refused.

Two IDs from different workers differ in the worker bits, two from users alive at the same
time in one worker in the slot bits, and two of one user only after 2**sequence_bits - 1 of
its sequences (by then the first has long ended). Locust's master numbers workers 0, 1, 2,
... in the order they connect and never reuses a number while it runs.

Example:
    layout = IdLayout.of("TYPE_UINT32", RunSize(workers=3, users_per_worker=4))
    # 2 worker bits, 2 slot bits, 28 sequence bits
    ids = SequenceIds(layout, worker=2, slot=1)
    ids.next(), ids.next()  # (0x9000_0001, 0x9000_0002)

Sequences of requests to a stateful model, each response checked against the running sum.

A sequence user (users.py, `TritonSequenceHttpUser`/`TritonSequenceGrpcUser`) sends one
sequence after another: N requests (N drawn per sequence from --sequence-length) with one
correlation ID (above), the first flagged start, the last end. Each request
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
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from loadtests.clients import PreparedRequest, RequestFailure, TritonClient
from loadtests.clients.base import SequenceStep, Validator
from loadtests.config.batch_size import BatchSizeSpec
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import Settings
from loadtests.errors import ModelMismatchError, StartupError

# Integer datatypes a sequence user's running sum can be sent in (one value per request).
SEQUENCE_DATATYPES = ("INT32", "INT64", "UINT32", "UINT64")
# The bits of the ID each CORRID data_type keeps (a model without a CORRID control: 64).
ID_BITS = {"TYPE_UINT32": 32, "TYPE_INT32": 31}
WIDE_LAYOUT_BITS = (31, 16, 16)  # worker, slot, sequence: the 64-bit layout
# Fewer bits than this for the sequence number would reuse a user's IDs too soon (255 sequences).
MIN_SEQUENCE_BITS = 8


@dataclass(frozen=True)
class RunSize:
    """What a run's IDs must tell apart: worker indexes 0..workers-1, users 0..users_per_worker-1."""

    workers: int = 1
    users_per_worker: int = 1

    @classmethod
    def planned(cls, workers: int, users: int) -> RunSize:
        """Locust's dispatcher shares users out evenly: no worker holds more than users/workers, rounded up."""
        workers = max(workers, 1)
        return cls(workers, max(-(-users // workers), 1))


@dataclass(frozen=True)
class IdLayout:
    """How many bits the worker index, the user slot and the sequence number each get."""

    worker_bits: int = WIDE_LAYOUT_BITS[0]
    slot_bits: int = WIDE_LAYOUT_BITS[1]
    sequence_bits: int = WIDE_LAYOUT_BITS[2]

    @classmethod
    def of(cls, corrid_type: str | None, run: RunSize | None) -> IdLayout:
        """The layout for a model's CORRID data_type in a run of that size (None: not known yet);
        raises StartupError when the run cannot fit."""
        bits = ID_BITS.get(corrid_type or "")
        if bits is None:
            return cls()
        if run is None:
            raise StartupError(
                f"a {corrid_type} CORRID needs the run's worker and user count, which this worker has not "
                "received from the master: sequence IDs cannot be assigned"
            )
        worker_bits, slot_bits = (run.workers - 1).bit_length(), (run.users_per_worker - 1).bit_length()
        sequence_bits = bits - worker_bits - slot_bits
        if sequence_bits < MIN_SEQUENCE_BITS:
            raise StartupError(
                f"{run.workers} workers x {run.users_per_worker} sequence users per worker do not fit the "
                f"{bits}-bit correlation IDs of a {corrid_type} CORRID (at most {bits - MIN_SEQUENCE_BITS} bits "
                f"for worker index and user, {worker_bits + slot_bits} needed): use fewer workers or users, "
                "or give the model a TYPE_UINT64 CORRID"
            )
        return cls(worker_bits, slot_bits, sequence_bits)

    @property
    def sequences_per_cycle(self) -> int:
        return (1 << self.sequence_bits) - 1  # numbers 1..2**bits-1

    def correlation_id(self, worker: int, slot: int, sequence: int) -> int:
        """The ID of one user's sequence; raises ValueError outside the layout's ranges."""
        for what, value, bits in (("worker index", worker, self.worker_bits), ("user slot", slot, self.slot_bits)):
            if not 0 <= value < 1 << bits:
                raise ValueError(f"{what} {value} is outside 0..{(1 << bits) - 1}")
        if not 1 <= sequence <= self.sequences_per_cycle:
            raise ValueError(f"sequence number {sequence} is outside 1..{self.sequences_per_cycle}")
        return (worker << self.slot_bits | slot) << self.sequence_bits | sequence


@dataclass
class UserSlots:
    """The user slots of one worker process: the lowest free one to each starting user."""

    taken: set[int] = field(default_factory=set)

    def acquire(self) -> int:
        slot = next(s for s in range(len(self.taken) + 1) if s not in self.taken)
        self.taken.add(slot)
        return slot

    def release(self, slot: int) -> None:
        self.taken.discard(slot)


@dataclass
class SequenceIds:
    """One user's correlation IDs, a new one per sequence; raises StartupError when the
    worker index or the slot is outside the layout (a worker that joined, or users added,
    after the run's size was fixed)."""

    layout: IdLayout
    worker: int
    slot: int
    _last: int = 0

    def __post_init__(self) -> None:
        try:
            self.layout.correlation_id(self.worker, self.slot, 1)
        except ValueError as error:
            raise StartupError(
                f"sequence user {self.slot} of worker {self.worker} has no correlation IDs of its own "
                f"({error}; the IDs were laid out for the workers and users at the test's start)"
            ) from None

    def next(self) -> int:
        self._last = self._last % self.layout.sequences_per_cycle + 1
        return self.layout.correlation_id(self.worker, self.slot, self._last)


class SequenceTarget(Protocol):
    """What a sequence's requests are built for: a prepared endpoint (endpoints.Endpoint), whose
    validator is its kind's check of every response (the sequence kind's: `check_running_sum`)."""

    name: str
    model: ModelSpec
    validator: Validator | None


def check_sequence_model(model: ModelSpec, settings: Settings) -> None:
    """What a sequence user needs (loadtests/workloads/sequences.py): a model with sequence batching and
    one integer input and one output (a running sum), closed-loop traffic, batch size 1."""
    if not model.sequence_batching:
        raise ModelMismatchError(
            f"model '{model.name}' has no sequence_batching in its config: sequence users send correlation IDs "
            "and start/end flags only to sequence models"
        )
    if len(model.inputs) != 1 or len(model.outputs) != 1 or model.inputs[0].datatype not in SEQUENCE_DATATYPES:
        raise ModelMismatchError(
            f"model '{model.name}' is not an accumulator: sequence users send one integer per request "
            f"({'/'.join(SEQUENCE_DATATYPES)} input of shape [1]) and check one output against the running sum"
        )
    if model.string_correlation_ids:
        # Measured on the bundled Triton: a numeric ID is copied as 8 raw bytes into the string
        # tensor and every request is refused as malformed; string IDs (tritonclient's own too)
        # fail its check of the control tensor ("unexpected number of string elements 2").
        raise ModelMismatchError(
            f"model '{model.name}' takes string correlation IDs (its CORRID control is TYPE_STRING), "
            "and sequence users send integer IDs: give it a TYPE_UINT64, TYPE_INT64, TYPE_UINT32 or TYPE_INT32 CORRID"
        )
    if not model.inputs[0].accepts((1,)):
        raise ModelMismatchError(f"input '{model.inputs[0].name}' of model '{model.name}' does not take shape [1]")
    if settings.open_loop:
        raise ModelMismatchError(
            "sequence users run closed loop (each request waits for the previous one of its sequence): "
            "drop --traffic/--rate"
        )
    if settings.batch_size.sizes != (1,):
        raise ModelMismatchError("sequence users send batch size 1 (one step of one sequence per request)")


SEQUENCE_STATE = "sequence state"
# Values sent are 1..9: a sequence of a million requests still sums within INT32.
LOWEST_VALUE, HIGHEST_VALUE = 1, 9


def sequence_request(
    client: TritonClient, endpoint: SequenceTarget, step: SequenceStep, value: int, expected_sum: int | None
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
        endpoint: SequenceTarget,
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
            failure = self.client.infer(request, self.endpoint.validator)
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
