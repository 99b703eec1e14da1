"""The one reader of Triton's control plane (loadtests/clients/control.py), against the real Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_control_plane.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tritonclient.http as httpclient

from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import open_control
from loadtests.errors import ServerError
from loadtests.server import TEST_REPOSITORY, LocalTriton
from tests.helpers import THROWAWAY_STOP_S, grpc_target


def send(http_address: str, model: str, requests: int, batch_size: int) -> None:
    """`requests` inferences of [batch_size, 16] zeros, through tritonclient (an independent sender)."""
    client = httpclient.InferenceServerClient(http_address)
    try:
        tensor = httpclient.InferInput("INPUT0", [batch_size, 16], "FP32")
        tensor.set_data_from_numpy(np.zeros((batch_size, 16), np.float32))
        for _ in range(requests):
            client.infer(model, [tensor])
    finally:
        client.close()


@pytest.fixture(scope="module")
def explicit_triton(tmp_path_factory):
    """A Triton that lets clients load and unload models (--model-control-mode=explicit)."""
    server = LocalTriton(
        [TEST_REPOSITORY],
        log_file=tmp_path_factory.mktemp("explicit") / "triton.log",
        extra_args=["--model-control-mode=explicit", "--load-model=identity"],
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    with server:
        yield server


# -- health and metadata ------------------------------------------------------------------------
def test_health_answers_as_triton_does(triton):
    control = TritonControl(triton.http_address)
    assert control.server_live() is True
    assert control.server_ready() is True
    assert control.model_ready("identity") is True
    assert control.model_ready("no_such_model") is False


def test_server_metadata_names_the_extensions_the_suite_uses(triton):
    metadata = TritonControl(triton.http_address).server_metadata()
    assert metadata["name"] == "triton"
    assert {"statistics", "model_repository", "model_configuration"} <= set(metadata["extensions"])


def test_model_metadata_and_config_are_tritons(triton):
    control = TritonControl(triton.http_address)
    metadata = control.model_metadata("identity")
    config = control.model_config("identity")
    reference = httpclient.InferenceServerClient(triton.http_address)
    try:
        assert metadata == reference.get_model_metadata("identity")
        assert config == reference.get_model_config("identity")
    finally:
        reference.close()
    assert metadata["name"] == config["name"] == "identity"
    assert [t["name"] for t in metadata["inputs"]] == [t["name"] for t in config["input"]] == ["INPUT0"]


def test_grpc_documents_are_https_for_every_model(triton):
    # Protobuf's JSON leaves out zero values and writes 64-bit numbers as strings: read over
    # gRPC only, a model without batching had no max_batch_size (the report printed "?") and a
    # queue delay was "1000". The gRPC reader gives the documents HTTP gives.
    over_http = TritonControl(triton.http_address)
    over_grpc = open_control(grpc_target(triton.grpc_address))
    models = [entry["name"] for entry in over_http.repository_index()]
    assert "stream_gaps" in models and "bert_qa_dynbatch" in models
    for model in models:
        config = over_grpc.model_config(model)
        # tritonclient's .proto is newer than the server's: one field the server never sends.
        config.get("ensemble_scheduling", {}).pop("max_inflight_requests", None)
        assert config == over_http.model_config(model), model
        assert over_grpc.model_metadata(model) == over_http.model_metadata(model), model
    assert over_grpc.statistics(models) == over_http.statistics(models)
    assert over_grpc.server_metadata() == over_http.server_metadata()
    ready = [entry["name"] for entry in over_http.repository_index(ready=True)]
    assert [entry["name"] for entry in over_grpc.repository_index(ready=True)] == ready and ready


def test_a_missing_model_is_one_clear_line(triton):
    control = TritonControl(triton.http_address)
    for call in (control.model_metadata, control.model_config, lambda m: control.statistics([m])):
        with pytest.raises(ServerError) as raised:
            call("no_such_model")
        message = str(raised.value)
        assert "no_such_model" in message and re.search(r"HTTP 4\d\d ", message) and "\n" not in message


# -- statistics and metrics -----------------------------------------------------------------------
def test_statistics_count_exactly_the_inferences_sent(triton):
    control = TritonControl(triton.http_address)
    before = control.statistics(["identity"])["identity"]["1"]
    send(triton.http_address, "identity", 7, batch_size=3)
    after = control.statistics(["identity"])["identity"]["1"]
    assert after["name"] == "identity"
    assert after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"] == 7
    assert after["inference_count"] - before["inference_count"] == 7 * 3


def test_statistics_of_every_model(triton):
    everything = TritonControl(triton.http_address).statistics()
    assert {"identity", "sleep", "text_reverse"} <= set(everything)
    assert all(set(versions) for versions in everything.values())


def test_metrics_text_is_tritons_prometheus_page(triton):
    send(triton.http_address, "identity", 1, batch_size=1)
    text = TritonControl(triton.http_address, triton.metrics_address).metrics_text()
    assert "# TYPE nv_inference_count counter" in text
    assert 'nv_inference_count{model="identity",version="1"}' in text


def test_metrics_without_a_metrics_address_says_so(triton):
    with pytest.raises(ServerError, match="metrics address"):
        TritonControl(triton.http_address).metrics_text()


# -- the repository ------------------------------------------------------------------------------
def test_repository_index_lists_the_loaded_models(triton):
    index = TritonControl(triton.http_address).repository_index()
    states = {entry["name"]: entry.get("state") for entry in index}
    assert states["identity"] == "READY"
    ready_only = TritonControl(triton.http_address).repository_index(ready=True)
    assert {entry["name"] for entry in ready_only} <= set(states)


def test_load_refused_without_explicit_model_control(triton):
    with pytest.raises(ServerError) as raised:
        TritonControl(triton.http_address).load("identity")
    assert "load" in str(raised.value) and "\n" not in str(raised.value)


def test_unload_then_load_with_a_config_override(explicit_triton):
    control = TritonControl(explicit_triton.http_address)
    original = control.model_config("identity")
    control.unload("identity")
    assert control.model_ready("identity") is False
    # Triton answers an unload at once and finishes it in the background.
    assert {e["name"]: e.get("state") for e in control.repository_index()}["identity"] in ("UNLOADING", "UNAVAILABLE")

    # The config Triton reports is auto-completed: preferred_batch_size [64] was filled in from
    # max_batch_size 64, and a smaller max_batch_size fails against it, so it goes too.
    assert original["dynamic_batching"]["preferred_batch_size"] == [original["max_batch_size"]]
    override = {**original, "max_batch_size": original["max_batch_size"] // 2, "dynamic_batching": {}}
    control.load("identity", config=override)
    assert control.model_ready("identity") is True
    assert control.model_config("identity")["max_batch_size"] == original["max_batch_size"] // 2

    # A plain load keeps the override (the files did not change); after an unload it reads
    # the repository's own config.pbtxt again.
    control.load("identity")
    assert control.model_config("identity")["max_batch_size"] == original["max_batch_size"] // 2
    control.unload("identity")
    control.load("identity")
    assert control.model_config("identity")["max_batch_size"] == original["max_batch_size"]


def test_load_of_an_unknown_model_is_one_clear_line(explicit_triton):
    with pytest.raises(ServerError) as raised:
        TritonControl(explicit_triton.http_address).load("no_such_model")
    assert "no_such_model" in str(raised.value) and "\n" not in str(raised.value)


# -- faults a real Triton cannot produce on demand ------------------------------------------------
def test_unreachable_server_is_one_line(triton, held_ports):
    http, grpc = f"127.0.0.1:{held_ports.http}", f"127.0.0.1:{held_ports.grpc}"
    control = TritonControl(http, grpc, timeout_s=1.0)
    for call in (
        control.server_live,
        lambda: control.model_ready("identity"),
        control.server_metadata,
        lambda: control.statistics(["identity"]),
        control.metrics_text,
    ):
        with pytest.raises(ServerError, match="Connection refused") as raised:
            call()
        assert "\n" not in str(raised.value)
