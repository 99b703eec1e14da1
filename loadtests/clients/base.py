"""What HTTP and gRPC clients share: timing, failure names, and the Locust request event.

The protocol modules (`http.py`, `grpc.py`) only know the wire: how to build a
request once, send it, and decode a response. Everything else lives here, so the
two protocols are measured and reported identically.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loadtests.clients.failures import INTERRUPTED, TIMEOUT, RequestFailure
from loadtests.clients.outcome import RequestOutcome, StreamTimings
from loadtests.clients.trace_ids import TraceIds
from loadtests.config.addresses import TritonTarget
from loadtests.config.model_spec import ModelSpec

logger = logging.getLogger(__name__)

# Pre-flight calls (live, ready, metadata) are not what is measured: they get their own,
# generous timeout, so a short --request-timeout does not fail the pre-flight on a busy host.
CONTROL_TIMEOUT_S = 10.0
# An open-loop request sent more than this after its intended time counts as late.
LATE_NS = 1_000_000
# A RequestOutcome from its fields in order, without the generated constructor's argument
# handling: 145 ns against 280 ns per request (measured; clients/outcome.py).
_new_outcome = tuple.__new__


@dataclass(frozen=True)
class SequenceStep:
    """One request's place in a sequence: Triton's `sequence_id`, `sequence_start` and
    `sequence_end` request parameters, and what the request tells the sequence counts.

    `early`: the last request of a sequence the test's stop cut short (END sent before the
    sequence's length was reached). `recovery`: the END a failed sequence is closed with
    (the sequence was already counted as failed, so this request counts none).

    Example: SequenceStep(correlation_id=0x2_0001_0003, start=True, end=False)
    """

    correlation_id: int
    start: bool
    end: bool
    early: bool = False
    recovery: bool = False

    def outcome(self, failure: RequestFailure | None) -> str | None:
        """The sequence's outcome this request decides ("completed", "failed", "ended_early"), if any."""
        if self.recovery:
            return None
        if failure is not None:
            return "failed"
        if self.end:
            return "ended_early" if self.early else "completed"
        return None


@dataclass(frozen=True)
class PreparedRequest:
    """One request body built before the test, reused for every send.

    `wire` is the protocol's own object (HTTP body + headers, or a gRPC protobuf).
    `seq_len` is the token count of a BERT request (for validating per-token outputs).
    `expected` is what an --input-data file's `validation_data` says the outputs must be:
    per output, one flat array per sample in batch order.
    `request_bytes` is the request's body on the wire (HTTP body, or the gRPC message), for
    the bytes-per-second a worker sends (what a machine's network egress must carry).
    `sequence` is set for a request of a sequence (sequence users build them one by one).
    """

    endpoint: str
    model: str
    batch_size: int
    wire: Any
    seq_len: int | None = None
    expected: dict[str, tuple[np.ndarray, ...]] | None = None
    request_bytes: int = 0
    sequence: SequenceStep | None = None


Validator = Callable[[dict[str, np.ndarray], dict[str, str], PreparedRequest], None]


@dataclass
class _FailureLog:
    """Logs the server's message the first time each failure name is seen (not per request)."""

    seen: set[str] = field(default_factory=set)

    def note(self, failure: RequestFailure, endpoint: str) -> None:
        if failure.name not in self.seen:
            self.seen.add(failure.name)
            logger.warning("%s: first '%s' failure: %s", endpoint, failure.name, failure.detail or "(no detail)")


_failure_log = _FailureLog()


class TritonClient(ABC):
    """One connection to Triton for one Locust user (clients are not shared between greenlets)."""

    protocol: str = ""

    def __init__(self, target: TritonTarget, timeout_s: float, request_event: Any) -> None:
        self.target = target
        self.address = target.first  # the control plane's, and the first request's
        # "https://" or "grpcs://" when TLS: the address as the options write it
        self.scheme = f"{target.scheme}://" if target.tls else ""
        # The replica the last request went to (set by `_send`; reported with each request).
        self.replica = self.address
        self.timeout_s = timeout_s
        self._timeout_ns = int(timeout_s * 1e9)
        self.request_event = request_event
        # --trace-sample: the process's ids (prepare() then builds requests that carry one) and
        # the id of the last request sent (reported with it), else None.
        self.trace_ids: TraceIds | None = None
        self.trace_id: bytes | None = None

    # -- control plane (pre-flight) ---------------------------------------------------
    # Asked over the user's own protocol, so a run checks the port it will load: HTTP through
    # clients/control.py (the one HTTP control-plane reader), gRPC through tritonclient.grpc.
    @abstractmethod
    def server_live(self) -> bool: ...

    @abstractmethod
    def model_ready(self, model: str) -> bool: ...

    @abstractmethod
    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        """Triton's metadata and config JSON for the model (pre-flight turns them into a ModelSpec)."""

    def replica_clients(self) -> list[TritonClient]:
        """A client for each other replica of this client's address option, for the pre-flight
        to ask each one whether it is live and has the model (the caller closes them)."""
        return []

    # -- data plane ---------------------------------------------------------------------
    @abstractmethod
    def warm(self) -> bool:
        """Open the data connection now (TCP, and HTTP/2 for gRPC), so that the first timed
        request does not pay for it; both clients connect lazily. False if it failed (the
        requests will then fail and be counted; this is not the place to stop a test)."""

    @abstractmethod
    def prepare(
        self,
        model: ModelSpec,
        inputs: dict[str, np.ndarray],
        endpoint: str,
        batch_size: int,
        sequence: SequenceStep | None = None,
    ) -> Any:
        """Build the wire object for these inputs once (serialisation is the main client cost);
        with `sequence`, the request carries its sequence parameters."""

    @abstractmethod
    def wire_bytes(self, wire: Any) -> int:
        """The size of a prepared request's body on the wire."""

    @abstractmethod
    def _send(self, wire: Any) -> Any:
        """Send one prepared request; return the raw response or raise RequestFailure."""

    @abstractmethod
    def _response_length(self, response: Any) -> int: ...

    @abstractmethod
    def _decode(self, response: Any) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """Output arrays and their Triton datatypes, for validation only."""

    @abstractmethod
    def close(self) -> None: ...

    def outputs(self, response: Any) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """A response `infer` handed to its `on_response`, decoded: output arrays and datatypes."""
        return self._decode(response)

    def infer(
        self,
        request: PreparedRequest,
        validate: Validator | None = None,
        intended_ns: int | None = None,
        on_response: Callable[[Any], None] | None = None,
    ) -> RequestFailure | None:
        """Send one request, time it alone, and report it through Locust's request event;
        returns the failure it was reported with (None for a success).

        Open-loop traffic passes `intended_ns`, the request's scheduled send time on the
        perf_counter_ns clock: the reported latency then runs from that time (corrected for
        coordinated omission), and the latency from the actual send goes in the context.
        `on_response` gets the raw response of an answered request (undecoded: `outputs()`).
        """
        exception: RequestFailure | None = None
        length = 0
        start = time.perf_counter_ns()
        try:
            response = self._send(request.wire)
        except RequestFailure as failure:
            end = time.perf_counter_ns()
            exception = failure
        except BaseException as error:
            # Ctrl-C or a forced stop (KeyboardInterrupt, GreenletExit) in the middle of the
            # request: the server may have counted it, so it is reported, then the stop goes on.
            end = time.perf_counter_ns()
            detail = f"{type(error).__name__} while the request was in flight"
            self._report(request, start, end, intended_ns, 0, RequestFailure(INTERRUPTED.name, detail))
            raise
        else:
            end = time.perf_counter_ns()
            length = self._response_length(response)
            if on_response is not None:
                on_response(response)
            if end - start > self._timeout_ns:
                # gevent timeouts are cooperative: when the loop is busy elsewhere, a late
                # response can be read before the timer fires. Over the deadline is a timeout.
                exception = RequestFailure(TIMEOUT.name, f"response after {(end - start) / 1e6:.1f} ms")
            elif validate is not None:
                try:
                    outputs, datatypes = self._decode(response)
                    validate(outputs, datatypes, request)
                except RequestFailure as failure:
                    exception = failure
        self._report(request, start, end, intended_ns, length, exception)
        return exception

    def _report(
        self,
        request: PreparedRequest,
        start_ns: int,
        end_ns: int,
        intended_ns: int | None,
        length: int,
        exception: RequestFailure | None,
        stream: StreamTimings | None = None,
    ) -> None:
        failure = None
        if exception is not None:
            _failure_log.note(exception, request.endpoint)
            failure = str(exception)
        elapsed_ns = end_ns - start_ns
        uncorrected_us = None
        late = False
        if intended_ns is not None:
            uncorrected_us = elapsed_ns / 1e3
            late = start_ns - intended_ns > LATE_NS
            elapsed_ns = end_ns - min(intended_ns, start_ns)
        sequence = request.sequence
        started, ended = False, None
        if sequence is not None:
            started, ended = sequence.start and not sequence.recovery, sequence.outcome(exception)
        outcome = _new_outcome(
            RequestOutcome,
            (
                request.endpoint,
                request.model,
                self.protocol,
                elapsed_ns / 1e3,
                request.batch_size,
                failure,
                uncorrected_us,
                late,
                request.request_bytes,
                length,
                started,
                ended,
                self.replica,
                stream,
                self.trace_id,
            ),
        )
        # The outcome is the event's context: the recording takes it whole (run/requests.py).
        self.request_event.fire(
            request_type=self.protocol,
            name=request.model,
            response_time=elapsed_ns / 1e6,
            response_length=length,
            exception=exception,
            context=outcome,
        )
