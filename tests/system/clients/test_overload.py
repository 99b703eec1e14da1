"""Overload is named as overload, the same on both protocols, and reconciles with Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_overload.py.
"""

from __future__ import annotations

import re
import urllib.request

import pytest

from loadtests.clients.failures import CLASSES, RequestFailure
from loadtests.workloads.users import ConnectionBackoff
from tests.helpers import model_stats, read_summary, run_locust, triton_options

USERS_PER_PROTOCOL = 6


def rejected_metric(metrics_address: str, model: str) -> int:
    """Triton's nv_inference_request_failure{reason="REJECTED"} for the model (0 when absent)."""
    text = urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=10).read().decode()
    pattern = rf'^nv_inference_request_failure{{model="{model}",reason="REJECTED",version="1"}} (\S+)$'
    match = re.search(pattern, text, re.MULTILINE)
    return int(float(match.group(1))) if match else 0


@pytest.mark.parametrize(
    ("model", "overload_class"),
    [
        ("queue_limited", "overloaded (queue full)"),
        ("queue_limited_nobatch", "overloaded (queue full)"),
        ("queue_timeout", "overloaded (queue timeout)"),
    ],
)
def test_overload_is_one_class_on_both_protocols_at_comparable_rates(triton, tmp_path, model, overload_class):
    before = model_stats(triton.http_address, model)
    rejected_before = rejected_metric(triton.metrics_address, model)
    run_dir = tmp_path / "run"
    result = run_locust(
        ["TritonHttpUser", "TritonGrpcUser"],
        [*triton_options(triton), "--model", model, "--shape", "INPUT0:4", "--run-dir", str(run_dir)],
        users=2 * USERS_PER_PROTOCOL,
        run_time="3s",
    )
    assert result.returncode == 1, result.stderr[-3000:]  # Locust's exit code for failed requests
    after = model_stats(triton.http_address, model)
    endpoints = {e["protocol"]: e for e in read_summary(run_dir)["endpoints"]}
    assert set(endpoints) == {"http", "grpc"}
    expected = {"http": f"{overload_class}: HTTP 503", "grpc": f"{overload_class}: gRPC UNAVAILABLE"}
    for protocol, endpoint in endpoints.items():
        # Overload and nothing else: never "connection refused", no back-off.
        assert set(endpoint["failures_by_class"]) == {expected[protocol]}, endpoint["failures_by_class"]
        assert endpoint["failures"] > endpoint["requests"] - endpoint["failures"], endpoint  # really overloaded
    # Neither protocol throttles itself: measured before the fix, gRPC sent 225x fewer requests
    # (its overload answers were taken for a lost connection and backed off). A rate bound cannot
    # tell that apart from a slow host: with two other pytest processes on two cores the server
    # answered 150/s in all, what a back-off would leave. So the run's own failure names are put
    # to the client's back-off: none of them may pause a user.
    for endpoint in endpoints.values():
        for name in endpoint["failures_by_class"]:
            assert ConnectionBackoff().after(RequestFailure(name)) == 0.0, name
    # Reconciled with Triton: its successes are the client's; its failures are the failures of the
    # classes it counts (a queue timeout, REJECTED in its metrics), never a full queue.
    successes = sum(e["requests"] - e["failures"] for e in endpoints.values())
    failures = sum(e["failures"] for e in endpoints.values())
    assert after["requests"] - before["requests"] == successes
    counted = failures if CLASSES[overload_class].counted_by_triton else 0
    assert after["failures"] - before["failures"] == counted
    assert rejected_metric(triton.metrics_address, model) - rejected_before == counted
