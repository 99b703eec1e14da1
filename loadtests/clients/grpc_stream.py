"""A decoupled model's requests over gRPC: one `ModelStreamInfer` call per request.

A decoupled model answers a request with any number of responses (none included) and then a
response flagged final (`triton_final_response`; the request asks for it to be sent even when
empty, `triton_enable_empty_final_response`). Each request opens its own HTTP/2 stream on the
user's shared connection, sends its one ModelInferRequest and half-closes; Triton answers with
ModelStreamInferResponse messages ({error_message, infer_response}) and closes the stream with
its status once the final response is out.

Why a stream per request rather than one long stream per user: a request's deadline and its
cancellation (RST_STREAM CANCEL) then concern that request alone, a broken stream costs the
requests on it only, and a closed-loop user has one request in flight anyway. The cost is one
HEADERS frame per request (constant bytes, built once) and Triton's per-call setup.

Timed per request, in the hub as each DATA frame is read (outcome.TimedChunks): the first
response with outputs, each gap between responses with outputs, the final response (the
request's latency), and the number of responses with outputs (clients/outcome.StreamTimings).
"""

from __future__ import annotations

import time

from tritonclient.grpc import service_pb2

from loadtests.clients.base import INTERRUPTED, PreparedRequest, Validator
from loadtests.clients.failures import BAD_RESPONSE, RequestFailure, stream_ended, stream_error
from loadtests.clients.grpc import GrpcClient, _failure
from loadtests.clients.grpc_frames import NO_MESSAGE, CallFailure, timed_messages
from loadtests.clients.outcome import StreamTimings, TimedChunks

FINAL_RESPONSE = "triton_final_response"  # the response parameter that ends a request


class _Responses:
    """What one streamed request's messages said: its timings, or why it failed."""

    def __init__(self, origin_ns: int) -> None:
        self.origin_ns = origin_ns
        self.data_ns: list[int] = []
        self.final_ns: int | None = None
        self.failure: RequestFailure | None = None
        self.length = 0

    def read(self, messages, request_id: str, validate, client, request) -> None:
        for message, arrived_ns in messages:
            self.length += len(message)
            response = service_pb2.ModelStreamInferResponse.FromString(message)
            if response.error_message:
                self.failure = stream_error(response.error_message, len(self.data_ns))
                return
            infer = response.infer_response
            if infer.id != request_id:
                detail = f"a response for request id {infer.id!r} on the stream of {request_id!r}"
                self.failure = RequestFailure(BAD_RESPONSE.name, detail)
                return
            if infer.outputs:
                self.data_ns.append(arrived_ns)
                if validate is not None:
                    try:
                        outputs, datatypes = client._decode(infer.SerializeToString())
                        validate(outputs, datatypes, request)
                    except RequestFailure as failure:
                        self.failure = failure
                        return
            if FINAL_RESPONSE in infer.parameters and infer.parameters[FINAL_RESPONSE].bool_param:
                self.final_ns = arrived_ns
                return

    def timings(self) -> StreamTimings:
        return StreamTimings.of(self.origin_ns, self.data_ns, self.final_ns)


class GrpcStreamClient(GrpcClient):
    """GrpcClient for a decoupled model's endpoint: `infer` streams the request (its wire was
    prepared by GrpcClient.prepare with the stream's method). Unary requests never come here,
    so their path is unchanged."""

    def infer(
        self, request: PreparedRequest, validate: Validator | None = None, intended_ns: int | None = None
    ) -> RequestFailure | None:
        chunks = TimedChunks()
        self.replica = replica = self._chooser.next()
        pool, slot = self._slot(replica)
        broken: CallFailure | None = None
        start = time.perf_counter_ns()
        try:
            pool.connection(slot).unary(request.wire, self.timeout_s, chunks)
        except CallFailure as error:
            if error.kind != "protocol" or error.detail != NO_MESSAGE or chunks:
                broken = error
        except BaseException as error:
            interrupted = RequestFailure(INTERRUPTED.name, f"{type(error).__name__} while the request was in flight")
            self._report(request, start, time.perf_counter_ns(), intended_ns, 0, interrupted)
            raise
        end = time.perf_counter_ns()
        origin = start if intended_ns is None else min(intended_ns, start)
        responses = _Responses(origin)
        try:
            responses.read(timed_messages(chunks), request.wire.request_id, validate, self, request)
        except CallFailure as error:
            responses.failure = _failure(error)
        broken_failure = None if broken is None else _failure(broken)
        failure = responses.failure or stream_ended(
            responses.final_ns, start, self._timeout_ns, broken_failure, bool(responses.data_ns)
        )
        if failure is not None:
            if failure.failure_class.backs_off:
                self._chooser.failed(replica)
            self._report(request, start, end, intended_ns, responses.length, failure)
            return failure
        timings = responses.timings()
        self._report(request, start, responses.final_ns, intended_ns, responses.length, None, timings)
        return None
