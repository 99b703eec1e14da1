"""A decoupled model's requests over HTTP, through Triton's generate_stream (clients/http_stream.py):
against the session's Triton and the test repository's decoupled models, their timetables read
from Triton's config; against a scripted HTTP/1.1 server for what Triton does not do on demand
(events held back by a known time, a connection cut mid-stream, a stall, a body ending mid-event)."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest
from locust.event import EventHook

from loadtests.clients import Connections
from loadtests.clients.base import PreparedRequest
from loadtests.clients.http import HttpWire
from loadtests.clients.http_stream import HttpStreamClient
from loadtests.clients.http_wire import build_request
from loadtests.config.model_spec import ModelSpec
from loadtests.workloads.validation import make_validator
from tests.clients.test_http_wire import read_request, scripted_connections
from tests.helpers import http_target

# As tests/clients/test_grpc_stream.py: a Python thread's wake-up, the stub, Triton, the loopback.
SCHEDULING_SLACK_MS = 5.0
REQUESTS = 12


def _parameters(config: dict) -> dict[str, float]:
    return {key: float(value["string_value"]) for key, value in (config.get("parameters") or {}).items()}


def _client(address: str, timeout_s: float, fired: list) -> HttpStreamClient:
    event = EventHook()
    event.add_listener(lambda **kwargs: fired.append(kwargs))
    return HttpStreamClient(http_target(address), timeout_s, event, connections=Connections())


def _streamed(triton, model: str, count: int = REQUESTS, timeout_s: float = 10.0, validate: bool = False, values=4):
    """`count` requests in a row through one streaming client: their outcomes, failures and the
    model's parameters."""
    fired: list = []
    client = _client(triton.http_address, timeout_s, fired)
    try:
        metadata, config = client.model_metadata_and_config(model)
        spec = ModelSpec.from_triton(metadata, config)
        assert spec.decoupled
        inputs = {"INPUT0": np.arange(values, dtype=np.float32).reshape((1, values) if spec.batches else (values,))}
        wire = client.prepare(spec, inputs, f"{model} [http]", 1)
        request = PreparedRequest(f"{model} [http]", model, 1, wire, request_bytes=client.wire_bytes(wire))
        validator = make_validator(spec, lambda *args: None) if validate else None
        client.infer(request)  # the model's first request starts its stub's threads: not timed here
        failures = [client.infer(request, validator) for _ in range(count)]
    finally:
        client.close()
    return [event["context"] for event in fired[1:]], failures, _parameters(config)


def test_every_event_is_read_and_timed_as_the_model_sends_it(triton):
    outcomes, failures, params = _streamed(triton, "stream_gaps")
    assert failures == [None] * REQUESTS
    first_ms, gap_ms, responses = params["first_ms"], params["gap_ms"], int(params["responses"])
    for outcome in outcomes:
        timings = outcome.stream
        assert outcome.protocol == "http"
        assert timings.responses == responses, timings
        assert len(timings.gaps_us) == responses - 1
        assert timings.first_us >= first_ms * 1e3, timings  # never before the model sends it
        assert timings.final_us >= timings.first_us + sum(timings.gaps_us)
        assert outcome.latency_us == pytest.approx(timings.final_us)
    gaps = [gap for outcome in outcomes for gap in outcome.stream.gaps_us]
    assert statistics.median(gaps) == pytest.approx(gap_ms * 1e3, abs=SCHEDULING_SLACK_MS * 1e3 / 2)
    ttfr = statistics.median(outcome.stream.first_us for outcome in outcomes)
    assert first_ms * 1e3 <= ttfr < (first_ms + SCHEDULING_SLACK_MS) * 1e3, ttfr


def test_a_request_answered_by_the_final_flag_alone_succeeds_with_no_response(triton):
    outcomes, failures, params = _streamed(triton, "stream_sparse")
    assert failures == [None] * REQUESTS
    counts = [outcome.stream.responses for outcome in outcomes]
    assert counts.count(0) == REQUESTS // int(params["empty_every"])
    assert set(counts) == {0, int(params["responses"])}
    empty = [outcome.stream for outcome in outcomes if outcome.stream.responses == 0]
    assert all(timings.first_us is None and timings.gaps_us == () for timings in empty)


def test_a_model_failing_mid_stream_is_a_named_failure_of_that_request(triton):
    outcomes, failures, params = _streamed(triton, "stream_fail")
    every = int(params["fail_every"])
    names = [failure.name if failure is not None else None for failure in failures]
    assert names.count("server error: HTTP stream error after responses") == REQUESTS // every, names
    assert names.count(None) == REQUESTS - REQUESTS // every
    for outcome, failure in zip(outcomes, failures, strict=True):
        assert (outcome.stream is None) == (failure is not None)
        if failure is not None:
            assert "failed after" in failure.detail


def test_a_batching_model_gets_one_sample_and_its_events_validate(triton):
    """generate_stream adds the batch dimension (1) itself; each event's outputs, read back with
    the model's shape, pass --validate-responses' checks."""
    outcomes, failures, params = _streamed(triton, "stream_batching", count=4, validate=True)
    assert failures == [None] * 4
    assert [outcome.stream.responses for outcome in outcomes] == [int(params["responses"])] * 4


def test_a_request_triton_refuses_is_its_http_status(triton):
    """Three values for a [4] input: Triton answers 400 before any inference (no event stream)."""
    outcomes, failures, _ = _streamed(triton, "stream_gaps", count=2, values=3)
    assert [failure.name for failure in failures] == ["invalid request: HTTP 400"] * 2
    assert "shape" in failures[0].detail
    assert all(outcome.stream is None for outcome in outcomes)


def test_the_deadline_bounds_the_whole_stream(triton):
    _, _, params = _streamed(triton, "stream_gaps", count=1)
    final_ms = params["first_ms"] + (params["responses"] - 1) * params["gap_ms"]
    timeout_s = final_ms / 2 / 1e3
    outcomes, failures, _ = _streamed(triton, "stream_gaps", count=3, timeout_s=timeout_s)
    assert [failure.name for failure in failures] == ["timeout"] * 3
    for outcome in outcomes:
        assert outcome.stream is None
        assert timeout_s * 1e6 <= outcome.latency_us < final_ms * 1e3  # not held to the final response


# -- a scripted server ----------------------------------------------------------------------
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENT = b'data: {"OUTPUT0":[1.0,2.0,3.0,4.0],"model_name":"m","model_version":"1"}\n\n'
HELD_S = 0.1


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _scripted(*scripts, timeout_s: float = 2.0, requests: int = 1):
    fired: list = []
    with scripted_connections(*scripts) as port:
        client = _client(f"127.0.0.1:{port}", timeout_s, fired)
        path = "/v2/models/m/generate_stream"
        wire = HttpWire(path, b"{}", {}, build_request(f"127.0.0.1:{port}", path, b"{}", {}))
        request = PreparedRequest("m [http]", "m", 1, wire)
        failures = [client.infer(request) for _ in range(requests)]
        client.close()
    return failures, [event["context"] for event in fired]


def test_each_event_is_timed_when_it_arrives_not_when_the_body_ends():
    def held(conn):
        for _ in range(2):  # the same keep-alive connection serves the next request
            read_request(conn)
            conn.sendall(HEAD + chunk(EVENT))
            time.sleep(HELD_S)
            conn.sendall(chunk(EVENT[:20]))  # an event split over two chunks
            time.sleep(HELD_S)
            conn.sendall(chunk(EVENT[20:]) + b"0\r\n\r\n")

    failures, outcomes = _scripted(held, requests=2)
    assert failures == [None, None]
    for outcome in outcomes:
        timings = outcome.stream
        assert timings.responses == 2
        assert timings.first_us < HELD_S * 1e6 / 2, timings
        # The second event is completed by the chunk sent after two holds, the body's end with it.
        assert timings.gaps_us[0] >= 2 * HELD_S * 1e6, timings
        assert timings.final_us >= timings.first_us + timings.gaps_us[0]


@pytest.mark.parametrize(("events", "name"), [(1, "stream broken: connection reset"), (0, "connection reset")])
def test_a_stream_cut_mid_way_is_a_counted_failure(events, name):
    """The server had the request once it answered an event: a cut after it is 'stream broken'."""

    def cut(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT) * events)
        time.sleep(0.05)

    failures, outcomes = _scripted(cut)
    assert [failure.name for failure in failures] == [name]
    assert outcomes[0].failure.startswith(name) and outcomes[0].stream is None


def test_a_stall_after_a_response_is_a_timeout_at_the_deadline():
    def stall(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT))
        time.sleep(1.5)

    failures, outcomes = _scripted(stall, timeout_s=0.5)
    assert [failure.name for failure in failures] == ["timeout"]
    assert 0.5e6 <= outcomes[0].latency_us < 1.0e6  # at the deadline, not when the server gave up


def test_a_body_ending_inside_an_event_is_a_bad_response():
    def short(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT) + chunk(b'data: {"OUTPUT0":') + b"0\r\n\r\n")
        time.sleep(0.3)

    failures, _ = _scripted(short)
    assert [failure.name for failure in failures] == ["bad response"]
    assert "inside an event" in failures[0].detail
