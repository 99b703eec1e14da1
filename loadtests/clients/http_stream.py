"""A decoupled model's requests over HTTP: Triton's `generate_stream` (server-sent events).

Each request is one POST of generate's JSON (generate.py, built once before the test) on the
user's keep-alive connection; Triton answers 200 with a chunked `text/event-stream` body, one
`data:` event per response with outputs, an `error` event if the model fails, and the body's
end once the final response is out. A refusal before inference is an ordinary HTTP status.

Timed as the gRPC stream is (grpc_stream.py), as each chunk is parsed (the `timed` of
http_wire.HttpConnection.exchange, filled by http_protocol.ResponseParser): the first response,
each gap, the final response (the body's end: the request's latency) and the number of
responses, from the send (closed loop) or the intended send (open loop), into the same
clients/outcome.StreamTimings.
"""

from __future__ import annotations

import json
import time
from http.client import HTTPException

import gevent

from loadtests.clients.base import INTERRUPTED, PreparedRequest, Validator
from loadtests.clients.failures import BAD_RESPONSE, RequestFailure, http_failure, stream_ended, stream_error
from loadtests.clients.generate import event_error, event_outputs, sse_events
from loadtests.clients.http import HttpClient, _error_text, _transport_failure
from loadtests.clients.http_protocol import ResponseError
from loadtests.clients.outcome import StreamTimings, TimedChunks
from loadtests.config.model_spec import ModelSpec

BODY_END = b""  # the piece HttpConnection.exchange's `timed` ends a complete chunked body with


class _Events:
    """What one streamed request's events said: its timings, or why it failed."""

    def __init__(self, origin_ns: int, model: ModelSpec | None) -> None:
        self.origin_ns = origin_ns
        self.model = model
        self.data_ns: list[int] = []
        self.final_ns: int | None = None
        self.failure: RequestFailure | None = None

    def read(self, chunks: TimedChunks, validate: Validator | None, request: PreparedRequest) -> None:
        events, cut = sse_events(chunks, chunks.times)
        for data, arrived_ns in events:
            try:
                event = json.loads(data)
            except ValueError:
                self.failure = RequestFailure(BAD_RESPONSE.name, f"an event that is not JSON: {data[:80]!r}")
                return
            message = event_error(event) if isinstance(event, dict) else "not a JSON object"
            if message is not None:
                self.failure = stream_error(message, len(self.data_ns), "HTTP")
                return
            self.data_ns.append(arrived_ns)
            if validate is not None and self.model is not None:
                try:
                    validate(*event_outputs(self.model, event), request)
                except RequestFailure as failure:
                    self.failure = failure
                    return
        if chunks and chunks[-1] == BODY_END:
            if cut:
                self.failure = RequestFailure(BAD_RESPONSE.name, f"the stream ended inside an event: {cut[:80]!r}")
                return
            self.final_ns = chunks.times[-1]

    def timings(self) -> StreamTimings:
        return StreamTimings.of(self.origin_ns, self.data_ns, self.final_ns)


class HttpStreamClient(HttpClient):
    """HttpClient for a decoupled model's endpoint: `infer` streams the request (its wire was
    prepared by HttpClient.prepare for generate_stream). Other requests never come here."""

    def infer(
        self, request: PreparedRequest, validate: Validator | None = None, intended_ns: int | None = None
    ) -> RequestFailure | None:
        chunks = TimedChunks()
        self.replica = replica = self._chooser.next()
        connection = self._connection(replica)
        broken: RequestFailure | None = None
        status, body = 200, b""
        start = time.perf_counter_ns()
        try:
            status, _, body = connection.exchange(request.wire.request, chunks)
        except (TimeoutError, gevent.Timeout, OSError, ResponseError, ValueError, HTTPException) as error:
            broken = _transport_failure(error)  # what arrived before it is in `chunks`
        except BaseException as error:
            interrupted = RequestFailure(INTERRUPTED.name, f"{type(error).__name__} while the request was in flight")
            self._report(request, start, time.perf_counter_ns(), intended_ns, 0, interrupted)
            raise
        end = time.perf_counter_ns()
        if broken is None and status != 200:  # refused before inference: an ordinary answer
            return self._failed(request, start, end, intended_ns, len(body), http_failure(status, _error_text(body)))
        if broken is None and not chunks:  # a whole body (Content-Length): it arrived at once
            chunks.append(body)
            chunks.append(BODY_END)
        events = _Events(start if intended_ns is None else min(intended_ns, start), request.wire.model)
        events.read(chunks, validate, request)
        length = sum(len(chunk) for chunk in chunks)
        failure = events.failure or stream_ended(events.final_ns, start, self._timeout_ns, broken, bool(events.data_ns))
        if failure is not None:
            return self._failed(request, start, end, intended_ns, length, failure)
        self._report(request, start, events.final_ns, intended_ns, length, None, events.timings())
        return None

    def _failed(
        self, request: PreparedRequest, start: int, end: int, intended_ns: int | None, length: int, failure
    ) -> RequestFailure:
        if failure.failure_class.backs_off:
            self._chooser.failed(self.replica)
        self._report(request, start, end, intended_ns, length, failure)
        return failure
