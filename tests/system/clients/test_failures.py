"""Failures are counted under stable, low-cardinality names, and successes around them are kept.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_failures.py.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from locust.event import EventHook

from loadtests.clients import RequestFailure
from loadtests.clients.http import HttpClient
from loadtests.config.settings import Settings
from loadtests.server import TritonPorts
from loadtests.workloads import parse_batch_size
from loadtests.workloads.endpoints import prepare_endpoint
from loadtests.workloads.kinds import BERT_QA, GENERIC, RESNET
from loadtests.workloads.validation import make_validator
from tests.helpers import http_target, model_stats, read_summary, run_locust, triton_options
from tests.unit.clients.test_failures import resetting_server


@pytest.mark.parametrize(
    ("user_class", "expected"),
    [("TritonHttpUser", "invalid request: HTTP 400"), ("TritonGrpcUser", "invalid request: gRPC INVALID_ARGUMENT")],
)
def test_server_rejections_are_named_by_status_and_successes_kept(triton, tmp_path, user_class, expected):
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"data": [{"INPUT0": [1.0, 2.0, 3.0, 4.0]}, {"INPUT0": [-1.0, 2.0, 3.0, 4.0]}]}))
    before = model_stats(triton.http_address, "reject")
    run_dir = tmp_path / "run"
    result = run_locust(
        [user_class],
        [*triton_options(triton), "--model", "reject", "--input-data", str(data), "--run-dir", str(run_dir)],
        users=1,
        run_time="2s",
    )
    assert result.returncode == 1, result.stderr[-2000:]  # Locust's exit code for request failures
    (endpoint,) = read_summary(run_dir)["endpoints"]
    assert set(endpoint["failures_by_class"]) == {expected}
    successes = endpoint["requests"] - endpoint["failures"]
    assert successes > 0 and endpoint["failures"] > 0
    after = model_stats(triton.http_address, "reject")
    # Triton counts a request that a Python model answers with an error response as a
    # "success" in its statistics (checked with Triton 2.x from nvidia-pytriton 0.7.0),
    # so the server's count is every request the users sent, failed or not.
    assert endpoint["requests"] == after["requests"] - before["requests"]


@pytest.mark.parametrize("user_class", ["TritonHttpUser", "TritonGrpcUser"])
def test_timeouts_are_named_timeout(triton, tmp_path, user_class):
    run_dir = tmp_path / "run"
    result = run_locust(
        [user_class],
        [
            *triton_options(triton),
            "--model",
            "sleep",
            "--shape",
            "INPUT0:4",
            "--request-timeout",
            "0.005",
            "--run-dir",
            str(run_dir),
        ],
        users=2,
        run_time="2s",
    )
    assert result.returncode == 1, result.stderr[-2000:]
    (endpoint,) = read_summary(run_dir)["endpoints"]
    assert endpoint["failures_by_class"] == {"timeout": endpoint["requests"]}


def fired_failures(client_factory, prepared, sends: int = 3) -> list[str | None]:
    event = EventHook()
    names: list[str | None] = []
    event.add_listener(lambda exception=None, **_: names.append(str(exception) if exception else None))
    client = client_factory(event)
    for _ in range(sends):
        client.infer(prepared)
    client.close()
    return names


def identity_endpoint(triton):
    settings = Settings(batch_size=parse_batch_size("2"), triton_http=http_target(triton.http_address))
    client = HttpClient(http_target(triton.http_address), 5.0, EventHook())
    try:
        return prepare_endpoint(GENERIC, client, "identity", dataclasses.replace(settings, model="identity"))
    finally:
        client.close()


def test_http_connection_refused_and_reset(triton):
    prepared = identity_endpoint(triton).pools[2][0]
    with TritonPorts.held() as closed:
        target = http_target(f"127.0.0.1:{closed.http}")
        assert fired_failures(lambda e: HttpClient(target, 2.0, e), prepared) == ["connection refused"] * 3
    with resetting_server() as address:
        assert fired_failures(lambda e: HttpClient(http_target(address), 2.0, e), prepared) == ["connection reset"] * 3


def test_wrong_expectation_is_a_validation_failure(triton):
    """A real response checked against a deliberately wrong expectation fails with a stable name."""
    settings = Settings(batch_size=parse_batch_size("2"), validate_responses=True)
    event = EventHook()
    client = HttpClient(http_target(triton.http_address), 10.0, event)
    endpoint = prepare_endpoint(RESNET, client, "resnet50", settings)
    request = endpoint.pools[2][0]
    response = client._send(request.wire)
    outputs, datatypes = client._decode(response)
    endpoint.validator(outputs, datatypes, request)  # the right expectation passes

    wrong_dtype = dataclasses.replace(
        endpoint.model, outputs=tuple(dataclasses.replace(o, datatype="FP16") for o in endpoint.model.outputs)
    )
    with pytest.raises(RequestFailure, match=r"^validation: probabilities datatype$"):
        make_validator(wrong_dtype, RESNET.validate)(outputs, datatypes, request)
    wrong_batch = dataclasses.replace(request, batch_size=3)
    with pytest.raises(RequestFailure, match=r"^validation: probabilities batch dimension$"):
        endpoint.validator(outputs, datatypes, wrong_batch)
    not_normalised = {"probabilities": outputs["probabilities"] * 2}
    with pytest.raises(RequestFailure, match=r"^validation: probabilities do not sum to 1$"):
        endpoint.validator(not_normalised, datatypes, request)
    client.close()


def test_qa_logits_must_be_one_per_token(triton):
    settings = Settings(batch_size=parse_batch_size("1"), seq_len=128, validate_responses=True)
    client = HttpClient(http_target(triton.http_address), 10.0, EventHook())
    endpoint = prepare_endpoint(BERT_QA, client, "bert_qa", settings)
    request = endpoint.pools[1][0]
    outputs, datatypes = client._decode(client._send(request.wire))
    endpoint.validator(outputs, datatypes, request)
    with pytest.raises(RequestFailure, match=r"^validation: start_logits not one per token$"):
        endpoint.validator(outputs, datatypes, dataclasses.replace(request, seq_len=384))
    client.close()
