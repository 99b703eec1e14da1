"""The pause after connection failures: bounded, doubling, reset by anything else."""

from __future__ import annotations

from loadtests.clients.base import RequestFailure
from loadtests.clients.failures import grpc_failure, http_failure
from loadtests.workloads.users import MAX_PAUSE_S, ConnectionBackoff


def test_connection_failures_double_the_pause_up_to_the_bound():
    backoff = ConnectionBackoff()
    pauses = [backoff.after(RequestFailure("connection refused")) for _ in range(10)]
    assert pauses[:4] == [0.001, 0.002, 0.004, 0.008]
    assert max(pauses) == MAX_PAUSE_S == pauses[-1]
    assert backoff.after(RequestFailure("connection reset")) == MAX_PAUSE_S


def test_any_other_outcome_resets_it():
    backoff = ConnectionBackoff()
    for _ in range(5):
        backoff.after(RequestFailure("connection refused"))
    assert backoff.after(None) == 0.0
    assert backoff.after(RequestFailure("connection refused")) == 0.001
    assert backoff.after(RequestFailure("invalid request: HTTP 400")) == 0.0
    assert backoff.after(RequestFailure("timeout")) == 0.0
    assert backoff.after(RequestFailure("connection error")) == 0.001


def test_overload_is_never_backed_off_and_a_stopping_server_is():
    """Found: gRPC overload (UNAVAILABLE "Exceeds maximum queue size") backed off as a refused
    connection, 225x fewer requests than HTTP against the same overloaded model."""
    backoff = ConnectionBackoff()
    overloaded = grpc_failure("UNAVAILABLE", "[StatusCode.UNAVAILABLE] Exceeds maximum queue size")
    assert [backoff.after(overloaded) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert backoff.after(http_failure(503, "Exceeds maximum queue size")) == 0.0
    stopping = grpc_failure("NOT_FOUND", "Request for unknown model: 'identity' has no available versions")
    assert [backoff.after(stopping) for _ in range(3)] == [0.001, 0.002, 0.004]
    assert backoff.after(http_failure(502, "Bad Gateway")) == 0.008  # a gateway with nothing behind it
