"""The gRPC users stream a decoupled model (one ModelStreamInfer call per request,
clients/grpc_stream.py): a whole Locust run against the session's Triton, its counts against
Triton's statistics of the model."""

from __future__ import annotations

import pytest

from tests.helpers import run_against_triton


@pytest.mark.parametrize("model", ["stream_gaps", "stream_fail"])
def test_the_grpc_user_streams_a_decoupled_model_and_counts_match_triton(triton, tmp_path, model):
    run = run_against_triton(
        triton,
        tmp_path / "run",
        ["TritonGrpcUser"],
        ["--model", model],
        models=(model,),
        users=2,
        run_time="3s",
        expect_exit=1 if model == "stream_fail" else 0,  # Locust's: any failed request is exit code 1
    )
    [endpoint] = run.summary["endpoints"]
    assert endpoint["name"] == f"{model} [grpc]"
    assert endpoint["requests"] > 0
    # Triton counts a request whose model failed mid-stream as a successful execution (the
    # model's execute() returned; the error travelled as a response): every request is its.
    assert endpoint["requests"] == run.served() + run.served(count="failures")
    assert run.served(count="failures") == 0
    failures = endpoint.get("failures_by_class") or {}
    if model == "stream_fail":
        assert set(failures) == {"server error: gRPC stream error after responses"}
        assert endpoint["failures"] == sum(failures.values()) > 0
    else:
        assert endpoint["failures"] == 0, failures
