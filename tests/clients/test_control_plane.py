"""The one reader of Triton's control plane (loadtests/clients/control.py), against the real Triton.

Every answer is compared with what Triton itself says (its statistics after a known number
of inferences, tritonclient's reading of the same config). A fake server appears only for
the fault a real Triton cannot produce on demand: one that accepts a connection and never
answers.
"""

from __future__ import annotations

import ast
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import open_control
from loadtests.errors import ServerError
from loadtests.server import TEST_REPOSITORY, LocalTriton
from tests.helpers import THROWAWAY_STOP_S, grpc_target

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROL_MODULE = REPO_ROOT / "loadtests" / "clients" / "control.py"
# A timeout far below the 5 s default, so an answer within a few of them shows the given one applied.
SHORT_TIMEOUT_S = 0.3
NEVER_ANSWERS_LIMIT_S = 3.0


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


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def never_answers():
    """host:port of a socket that accepts connections (the kernel's backlog does) and never replies."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


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
def test_unreachable_server_is_one_line(triton):
    control = TritonControl(closed_port(), closed_port(), timeout_s=1.0)
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


def test_a_server_that_never_answers_times_out(never_answers):
    control = TritonControl(never_answers, never_answers, timeout_s=SHORT_TIMEOUT_S)
    for call in (
        control.server_ready,
        control.server_metadata,
        lambda: control.statistics(["identity"]),
        control.metrics_text,
        control.repository_index,
        lambda: control.load("identity", config={"max_batch_size": 1}, timeout_s=SHORT_TIMEOUT_S),
    ):
        start = time.monotonic()
        with pytest.raises(ServerError, match="timed out"):
            call()
        assert time.monotonic() - start < NEVER_ANSWERS_LIMIT_S


GEVENT_PROBE = """
from gevent import monkey; monkey.patch_all()
import sys, time, gevent
from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import open_control
from loadtests.errors import ServerError
ticks = []
def tick():
    while True:
        ticks.append(time.monotonic()); gevent.sleep(0.02)
ticker = gevent.spawn(tick)
gevent.sleep(0)
try:
    TritonControl(sys.argv[1], timeout_s=1.0).statistics(["identity"])
except ServerError as error:
    print("error:", error)
print("ticks", len(ticks))
"""


def test_a_scrape_under_gevent_lets_other_greenlets_run(never_answers):
    # Inside Locust the standard library is monkey-patched: a scrape waiting on a frozen Triton
    # must yield to the users' greenlets, not block the loop for its whole timeout.
    done = subprocess.run(
        [sys.executable, "-c", GEVENT_PROBE, never_answers], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "timed out" in done.stdout
    ticks = int(done.stdout.split("ticks")[-1])
    assert ticks > 5, done.stdout  # a 1 s wait at 20 ms per tick: about 50 when cooperative, 1 when not


# -- the shape: one module builds Triton's control URLs --------------------------------------------
SCANNED = ("loadtests", "analysis", "locustfile.py")


def _literal_parts(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """(line, text, built) of every string literal that is not a docstring; `built` for f-string parts."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    docstrings.add(id(value))
                    parts.append((node.lineno, value.value, True))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            parts.append((node.lineno, node.value, False))
    return parts


def control_urls_outside_control() -> list[str]:
    """Where a module other than clients/control.py spells a Triton HTTP route ("/v2...") or
    builds a "/metrics" URL (plain "/metrics" strings are the load generator's own exporter)."""
    found = []
    files = [
        p
        for name in SCANNED
        for p in ([REPO_ROOT / name] if name.endswith(".py") else (REPO_ROOT / name).rglob("*.py"))
    ]
    for path in files:
        if path == CONTROL_MODULE:
            continue
        for line, text, built in _literal_parts(ast.parse(path.read_text(), str(path))):
            if "/v2" in text or (built and "/metrics" in text):
                found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {text!r}")
    return found


def test_only_the_control_module_builds_control_urls():
    assert control_urls_outside_control() == []
