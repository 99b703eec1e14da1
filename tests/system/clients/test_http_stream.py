"""A decoupled model's requests over HTTP, through Triton's generate_stream (clients/http_stream.py),
what only HTTP does: against the session's Triton (the timetables, empty and failing streams and the
deadline, for both protocols, are in test_grpc_stream.py), a batching model and a refusal; against a
scripted HTTP/1.1 server for what Triton does not do on demand (events held back by a known time, a
connection cut mid-stream, a stall, a body ending mid-event).

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_http_stream.py.
"""

from __future__ import annotations

from tests.system.clients.test_grpc_stream import streamed


def test_a_batching_model_gets_one_sample_and_its_events_validate(triton):
    """generate_stream adds the batch dimension (1) itself; each event's outputs, read back with
    the model's shape, pass --validate-responses' checks."""
    outcomes, failures, params = streamed(triton, "stream_batching", count=4, protocol="http", validate=True)
    assert failures == [None] * 4
    assert [outcome.stream.responses for outcome in outcomes] == [int(params["responses"])] * 4


def test_a_request_triton_refuses_is_its_http_status(triton):
    """Three values for a [4] input: Triton answers 400 before any inference (no event stream)."""
    outcomes, failures, _ = streamed(triton, "stream_gaps", count=2, protocol="http", values=3)
    assert [failure.name for failure in failures] == ["invalid request: HTTP 400"] * 2
    assert "shape" in failures[0].detail
    assert all(outcome.stream is None for outcome in outcomes)
