"""The six user classes against the real local Triton: counts agree with the server exactly."""

from __future__ import annotations

import pytest

from tests.helpers import model_stats, read_summary, run_locust, triton_options

# (user class, extra options, model whose statistics must agree)
USER_CASES = [
    ("BertQAHttpUser", ["--model", "bert_qa_dynbatch", "--seq-len", "128"], "bert_qa_dynbatch"),
    ("BertQAGrpcUser", ["--model", "bert_qa", "--seq-len", "variable"], "bert_qa"),
    ("ResNetHttpUser", [], "resnet50"),
    ("ResNetGrpcUser", [], "resnet50"),
    ("TritonHttpUser", ["--model", "text_reverse"], "text_reverse"),
    ("TritonGrpcUser", ["--model", "identity"], "identity"),
]
BATCH_SPECS = ["1,2,4", "1:0.7,8:0.3"]


@pytest.mark.parametrize("batch_spec", BATCH_SPECS)
@pytest.mark.parametrize(("user_class", "options", "model"), USER_CASES, ids=[c[0] for c in USER_CASES])
def test_user_class_counts_agree_with_triton(triton, tmp_path, user_class, options, model, batch_spec):
    before = model_stats(triton.http_address, model)
    run_dir = tmp_path / "run"
    result = run_locust(
        [user_class],
        [
            *triton_options(triton),
            *options,
            "--batch-size",
            batch_spec,
            "--validate-responses",
            "--run-dir",
            str(run_dir),
        ],
        users=2,
        run_time="3s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    after = model_stats(triton.http_address, model)
    (endpoint,) = read_summary(run_dir)["endpoints"]
    assert endpoint["model"] == model
    assert endpoint["failures"] == 0, endpoint["failures_by_class"]
    assert endpoint["requests"] > 10
    assert endpoint["requests"] == after["requests"] - before["requests"]
    assert endpoint["inferences"] == after["inferences"] - before["inferences"]
    # Both batch sizes of the SPEC were really sent: more inferences than requests.
    assert endpoint["inferences"] > endpoint["requests"]


def test_mixed_classes_are_separate_endpoints(triton, tmp_path):
    run_dir = tmp_path / "run"
    result = run_locust(
        ["BertQAHttpUser", "ResNetGrpcUser"],
        [*triton_options(triton), "--bert-model", "bert_qa", "--batch-size", "2", "--run-dir", str(run_dir)],
        users=2,
        run_time="3s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    endpoints = {e["name"]: e for e in read_summary(run_dir)["endpoints"]}
    assert set(endpoints) == {"bert_qa [http]", "resnet50 [grpc]"}
    for endpoint in endpoints.values():
        assert endpoint["requests"] > 0
        assert endpoint["inferences"] == 2 * endpoint["requests"]


@pytest.mark.parametrize("protocol", ["Http", "Grpc"])
def test_users_run_concurrently_against_a_slow_model(triton, tmp_path, protocol):
    """N users against a model that sleeps T reach about N/T requests/s, and Locust exits by itself."""
    users, sleep_s = 8, 0.020
    run_dir = tmp_path / "run"
    result = run_locust(
        [f"Triton{protocol}User"],
        [*triton_options(triton), "--model", "sleep", "--shape", "INPUT0:4", "--run-dir", str(run_dir)],
        users=users,
        run_time="4s",
        timeout=60,  # a run that does not exit by itself fails here
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (endpoint,) = read_summary(run_dir)["endpoints"]
    expected_rps = users / sleep_s
    assert endpoint["throughput_rps"] > 0.75 * expected_rps, endpoint
    assert endpoint["latency_us"]["p50"] < 1.5 * sleep_s * 1e6, endpoint["latency_us"]
