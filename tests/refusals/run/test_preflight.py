"""Bad input: one clear line and exit code 2 before any load is sent."""

from __future__ import annotations

import json

import pytest

from loadtests.server import TritonPorts
from tests.helpers import model_stats, run_locust

# Every test here is refused before any load: the background shard runs them (tests/shards.py).


def assert_startup_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def test_unknown_model(triton):
    result = run_locust(["BertQAHttpUser"], ["--triton-http", triton.http_address, "--model", "no_such_model"])
    assert_startup_error(result, "model 'no_such_model' is not ready", triton.http_address)


@pytest.mark.parametrize("user_class", ["ResNetHttpUser", "ResNetGrpcUser"])
def test_unreachable_server(user_class):
    with TritonPorts.held() as closed:
        result = run_locust(
            [user_class], ["--triton-http", f"127.0.0.1:{closed.http}", "--triton-grpc", f"127.0.0.1:{closed.grpc}"]
        )
    assert_startup_error(result, "cannot reach Triton at 127.0.0.1:")


def test_batch_size_above_max_batch_size_sends_nothing(triton):
    before = model_stats(triton.http_address, "bert_qa")
    result = run_locust(
        ["BertQAGrpcUser"], ["--triton-grpc", triton.grpc_address, "--model", "bert_qa", "--batch-size", "1-32"]
    )
    assert_startup_error(result, "32", "max_batch_size", "bert_qa")
    assert model_stats(triton.http_address, "bert_qa") == before


@pytest.mark.parametrize("spec", ["0", "4-2", "1:0.5,x", "1,,2", "eight"])
def test_malformed_batch_spec(triton, spec):
    result = run_locust(["ResNetHttpUser"], ["--triton-http", triton.http_address, "--batch-size", spec])
    assert_startup_error(result, spec)


def test_input_name_not_in_model(triton, tmp_path):
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"data": [{"INPUT0": [0.0] * 16, "NOT_AN_INPUT": [1.0]}]}))
    result = run_locust(
        ["TritonHttpUser"], ["--triton-http", triton.http_address, "--model", "identity", "--input-data", str(data)]
    )
    assert_startup_error(result, "NOT_AN_INPUT")


def test_bert_input_names_that_cannot_be_mapped(triton):
    result = run_locust(["BertQAHttpUser"], ["--triton-http", triton.http_address, "--model", "identity"])
    assert_startup_error(result, "identity")


def test_input_data_file_missing(triton, tmp_path):
    missing = tmp_path / "nowhere.json"
    result = run_locust(
        ["TritonGrpcUser"], ["--triton-grpc", triton.grpc_address, "--model", "identity", "--input-data", str(missing)]
    )
    assert_startup_error(result, str(missing))


def test_input_data_of_the_wrong_shape(triton, tmp_path):
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"data": [{"INPUT0": [0.0] * 5}]}))
    result = run_locust(
        ["TritonHttpUser"], ["--triton-http", triton.http_address, "--model", "identity", "--input-data", str(data)]
    )
    assert_startup_error(result, "INPUT0")


def test_variable_dim_without_shape(triton):
    result = run_locust(["TritonHttpUser"], ["--triton-http", triton.http_address, "--model", "sleep"])
    assert_startup_error(result, "INPUT0", "--shape")


def test_a_repeated_shape_keeps_every_value_as_perf_analyzer_does(triton):
    """`--shape a:16 --shape b:16` is `--shape "a:16 b:16"`: only the input not given is refused."""
    shapes = ["--shape", "input_ids:16", "--shape", "segment_ids:16"]
    result = run_locust(["TritonHttpUser"], ["--triton-http", triton.http_address, "--model", "bert_qa", *shapes])
    assert_startup_error(result, "input 'input_mask' [-1] has a variable shape: pass --shape input_mask:16")


def test_generic_user_without_model(triton):
    result = run_locust(["TritonHttpUser"], ["--triton-http", triton.http_address])
    assert_startup_error(result, "--model")


def test_image_user_against_a_non_image_model(triton):
    result = run_locust(["ResNetGrpcUser"], ["--triton-grpc", triton.grpc_address, "--model", "text_reverse"])
    assert_startup_error(result, "text_reverse")


def test_decoupled_model_is_refused_where_it_cannot_be_streamed(triton):
    """Finding 3: a decoupled model got thousands of HTTP 501 / gRPC UNIMPLEMENTED failures. The
    gRPC and HTTP users stream it (tests/system/workloads/test_streaming.py); sequences cannot, and the
    refusal names the user classes that can."""
    before = model_stats(triton.http_address, "decoupled_echo")
    result = run_locust(
        ["TritonSequenceGrpcUser"],
        ["--triton-grpc", triton.grpc_address, "--model", "decoupled_echo"],
    )
    assert_startup_error(result, "decoupled_echo", "decoupled", "TritonGrpcUser and TritonHttpUser stream it")
    assert model_stats(triton.http_address, "decoupled_echo") == before


def test_a_decoupled_model_generate_stream_cannot_carry_is_refused_over_http(triton):
    """HTTP streams a decoupled model through generate_stream, whose JSON takes one sample per
    request (Triton refuses a nested list): a batch is refused before any load, naming gRPC."""
    before = model_stats(triton.http_address, "stream_batching")
    result = run_locust(
        ["TritonHttpUser"],
        ["--triton-http", triton.http_address, "--model", "stream_batching", "--batch-size", "4"],
    )
    assert_startup_error(result, "stream_batching", "generate_stream", "--batch-size 1", "TritonGrpcUser streams it")
    assert model_stats(triton.http_address, "stream_batching") == before


def test_unknown_data_mode_is_refused(triton):
    before = model_stats(triton.http_address, "identity")
    result = run_locust(
        ["TritonHttpUser"], ["--triton-http", triton.http_address, "--model", "identity", "--data-mode", "ones"]
    )
    # Locust's own parser refuses it (argparse choices): "<prog>: error: argument --data-mode: ...".
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--data-mode" in errors[0] and "ones" in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert model_stats(triton.http_address, "identity") == before
