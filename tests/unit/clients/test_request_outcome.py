"""One request's outcome: built once by the client where the request ends, recorded whole.

No server: a client whose wire half is never called reports requests through the real
`TritonClient._report`, Locust's `request` event and the suite's listener into a real
WindowRecorder, as bench/request_event.py measures it.
"""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest
from locust.event import EventHook

from loadtests.clients.base import LATE_NS, PreparedRequest, SequenceStep, TritonClient
from loadtests.clients.failures import RequestFailure
from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.windows import WindowRecorder
from loadtests.run.requests import RequestRecording
from tests.helpers import grpc_target


class ReportingOnly(TritonClient):
    """The reporting half of a client (the wire methods are never called here)."""

    protocol = "grpc"
    server_live = model_ready = model_metadata_and_config = warm = prepare = wire_bytes = None
    _send = _response_length = _decode = close = None


ReportingOnly.__abstractmethods__ = frozenset()


def recording_client() -> tuple[ReportingOnly, WindowRecorder, list[dict]]:
    recorder = WindowRecorder()
    event = EventHook()
    fired: list[dict] = []
    event.add_listener(lambda **kwargs: fired.append(kwargs))
    event.add_listener(RequestRecording(SimpleNamespace(recorder=recorder, slowest_ms=0.0)).on_request)
    return ReportingOnly(grpc_target("10.0.0.7:8001"), 10.0, event), recorder, fired


def test_an_outcome_is_an_immutable_value_without_an_instance_dict():
    outcome = RequestOutcome("identity [grpc]", "identity", "grpc", 850.2, batch_size=4)
    assert (outcome.failure, outcome.uncorrected_us, outcome.late, outcome.replica) == (None, None, False, None)
    with pytest.raises(AttributeError):
        outcome.latency_us = 1.0
    assert not hasattr(outcome, "__dict__")  # nothing allocated per request beyond the tuple
    assert RequestOutcome(**outcome._asdict()) == outcome  # round trip by name
    assert pickle.loads(pickle.dumps(outcome)) == outcome


def test_the_client_builds_one_outcome_and_the_recording_takes_it_whole():
    client, recorder, fired = recording_client()
    step = SequenceStep(correlation_id=7, start=True, end=False)
    request = PreparedRequest("identity [grpc]", "identity", 2, b"", request_bytes=96, sequence=step)
    failure = RequestFailure("invalid request: HTTP 400", detail="bad input")
    start_ns = 10_000_000
    intended_ns = start_ns - 2 * LATE_NS  # sent 2 ms after its intended time: late
    client._report(request, start_ns, start_ns + 250_000, intended_ns, 64, failure)
    [event] = fired
    outcome = event["context"]
    assert outcome == RequestOutcome(
        "identity [grpc]",
        "identity",
        "grpc",
        (250_000 + 2 * LATE_NS) / 1e3,  # from the intended send time
        2,
        "invalid request: HTTP 400",
        250.0,  # from the actual send
        True,
        96,
        64,
        True,
        "failed",
        "10.0.0.7:8001",
    )
    assert event["response_time"] * 1e3 == pytest.approx(outcome.latency_us)  # Locust's view: the same request
    [window] = recorder.pending.values()
    stats = window["identity [grpc]"]
    assert (stats.requests, stats.inferences, dict(stats.failures)) == (1, 0, {"invalid request: HTTP 400": 1})
    assert (stats.late, stats.bytes_sent, stats.bytes_received) == (1, 96, 64)
    assert dict(stats.sequences) == {"started": 1, "failed": 1}
    assert stats.replicas.to_json()["10.0.0.7:8001"]["failures"] == 1


def test_a_success_counts_its_inferences_and_latency():
    client, recorder, _fired = recording_client()
    client._report(PreparedRequest("identity [grpc]", "identity", 4, b""), 0, 850_000, None, 64, None)
    [window] = recorder.pending.values()
    stats = window["identity [grpc]"]
    stats.fold()
    assert (stats.requests, stats.inferences, stats.late, stats.uncorrected) == (1, 4, 0, None)
    assert stats.histogram.get_max_value() == pytest.approx(850, rel=1e-3)


def test_requests_that_are_not_the_suites_are_endpoints_of_their_own_without_a_model():
    recorder = WindowRecorder()
    process = SimpleNamespace(recorder=recorder, slowest_ms=0.0)
    listener = RequestRecording(process)
    # A plain Locust user's request: its context is a dict (or nothing), not an outcome.
    listener.on_request(request_type="GET", name="/", response_time=1.0, response_length=7, context={})
    listener.on_request(request_type="GET", name="/", response_time=3.0, response_length=0, exception=OSError("x"))
    (window,) = recorder.pending.values()
    stats = window["GET /"]
    stats.fold()
    assert (stats.model, stats.protocol, stats.requests, dict(stats.failures)) == ("", "GET", 2, {"OSError": 1})
    assert stats.histogram.get_max_value() == pytest.approx(1000, rel=1e-3)  # the success's latency, in µs
    assert process.slowest_ms == 0.0  # the stop grace follows the suite's requests only
