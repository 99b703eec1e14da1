"""The pause after connection failures: bounded, doubling, reset by anything else."""

from __future__ import annotations

from loadtests.clients.backoff import MAX_PAUSE_S, ConnectionBackoff
from loadtests.clients.base import RequestFailure


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
    assert backoff.after(RequestFailure("HTTP 400")) == 0.0
    assert backoff.after(RequestFailure("timeout")) == 0.0
    assert backoff.after(RequestFailure("connection error")) == 0.001
