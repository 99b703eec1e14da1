"""The local Triton: demo models over HTTP and gRPC, dynamic batching, BYTES, clean teardown.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/server/test_server.py.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from loadtests.server import LocalTriton
from tests.helpers import model_stats, repository_of

DEMO_MODELS = ("bert_qa", "bert_qa_dynbatch", "resnet50")
SEQ_LEN = 128


def bert_inputs(batch: int, seq_len: int = SEQ_LEN, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, size=(batch, seq_len), dtype=np.int32)
    ids[:, 0] = 101  # [CLS]
    segments = np.zeros_like(ids)
    segments[:, seq_len // 2 :] = 1
    mask = np.ones_like(ids)
    mask[:, seq_len - 10 :] = 0
    return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def resnet_inputs(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


def inputs_for(model: str, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    return resnet_inputs(batch, seed) if model == "resnet50" else bert_inputs(batch, seed=seed)


EXPECTED_OUTPUTS = {
    "bert_qa": {"start_logits": (SEQ_LEN,), "end_logits": (SEQ_LEN,)},
    "bert_qa_dynbatch": {"start_logits": (SEQ_LEN,), "end_logits": (SEQ_LEN,)},
    "resnet50": {"probabilities": (1000,)},
}


def infer(protocol: str, address: str, model: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(address)
    try:
        inputs = []
        for name, array in arrays.items():
            tensor = module.InferInput(name, list(array.shape), "INT32" if array.dtype == np.int32 else "FP32")
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = client.infer(model, inputs)
        return {name: result.as_numpy(name) for name in EXPECTED_OUTPUTS[model]}
    finally:
        client.close()


def address(triton: LocalTriton, protocol: str) -> str:
    return triton.http_address if protocol == "http" else triton.grpc_address


def test_server_and_models_ready(triton):
    client = httpclient.InferenceServerClient(triton.http_address)
    assert client.is_server_live()
    assert client.is_server_ready()
    for model in (*DEMO_MODELS, "text_reverse", "sleep", "identity", "reject"):
        assert client.is_model_ready(model), model
    client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", DEMO_MODELS)
def test_demo_model_answers_with_documented_shapes(triton, protocol, model):
    batch = 3
    outputs = infer(protocol, address(triton, protocol), model, inputs_for(model, batch))
    for name, shape in EXPECTED_OUTPUTS[model].items():
        assert outputs[name].dtype == np.float32
        assert outputs[name].shape == (batch, *shape)
        assert np.isfinite(outputs[name]).all()
    if model == "resnet50":
        np.testing.assert_allclose(outputs["probabilities"].sum(axis=1), 1.0, rtol=1e-4)


@pytest.mark.parametrize("model", DEMO_MODELS)
def test_same_input_gives_same_output_over_both_protocols(triton, model):
    arrays = inputs_for(model, 2, seed=7)
    first = infer("http", triton.http_address, model, arrays)
    second = infer("http", triton.http_address, model, arrays)
    over_grpc = infer("grpc", triton.grpc_address, model, arrays)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
        np.testing.assert_array_equal(first[name], over_grpc[name])


def send_concurrently(http_address: str, model: str, count: int) -> None:
    def one(seed: int) -> None:
        infer("http", http_address, model, inputs_for(model, 1, seed=seed))

    with ThreadPoolExecutor(max_workers=count) as pool:
        list(pool.map(one, range(count)))


def test_dynamic_batching_merges_concurrent_requests(triton):
    requests = 24
    before = model_stats(triton.http_address, "bert_qa_dynbatch")
    send_concurrently(triton.http_address, "bert_qa_dynbatch", requests)
    after = model_stats(triton.http_address, "bert_qa_dynbatch")
    assert after["requests"] - before["requests"] == requests
    assert after["inferences"] - before["inferences"] == requests
    assert after["executions"] - before["executions"] < requests


def test_model_without_dynamic_batching_runs_each_request_alone(triton):
    requests = 12
    before = model_stats(triton.http_address, "bert_qa")
    send_concurrently(triton.http_address, "bert_qa", requests)
    after = model_stats(triton.http_address, "bert_qa")
    assert after["requests"] - before["requests"] == requests
    assert after["executions"] - before["executions"] == requests


TEXTS = np.array([["héllo wörld".encode()], [b"Triton"], ["数据".encode()]], dtype=object)
REVERSED = [["dlröw olléh"], ["notirT"], ["据数"]]


@pytest.mark.parametrize("transport", ["http-binary", "http-json", "grpc"])
def test_bytes_model_round_trips_strings(triton, transport):
    if transport == "grpc":
        client = grpcclient.InferenceServerClient(triton.grpc_address)
        tensor = grpcclient.InferInput("text", list(TEXTS.shape), "BYTES")
        tensor.set_data_from_numpy(TEXTS)
        result = client.infer("text_reverse", [tensor]).as_numpy("reversed")
    else:
        binary = transport == "http-binary"
        client = httpclient.InferenceServerClient(triton.http_address)
        tensor = httpclient.InferInput("text", list(TEXTS.shape), "BYTES")
        tensor.set_data_from_numpy(TEXTS, binary_data=binary)
        output = httpclient.InferRequestedOutput("reversed", binary_data=binary)
        result = client.infer("text_reverse", [tensor], outputs=[output]).as_numpy("reversed")
    client.close()
    decoded = [[item.decode() if isinstance(item, bytes) else item for item in row] for row in result]
    assert decoded == REVERSED


def test_launcher_stop_leaves_no_process_behind(tmp_path):
    repository = repository_of(tmp_path / "repository", "identity", "text_reverse", "reject")
    server = LocalTriton([repository], log_file=tmp_path / "triton.log")
    with server:
        started = server.started_pids
        # Triton itself plus one stub per model instance (3 test models, one instance each).
        stubs = [pid for pid in started if "triton_python_backend_stub" in " ".join(_cmdline(pid))]
        assert len(stubs) >= 3
    assert server.started_processes_alive() == []
    for pid in started:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_killed_triton_leaves_no_shared_memory_behind(tmp_path):
    # SIGKILL (a drill, the OOM killer) gives the Python backend no chance to unlink its 1-MB
    # regions in /dev/shm; without cleanup, each kill leaked one per model instance.
    import signal

    repository = repository_of(tmp_path / "repository", "identity")
    server = LocalTriton([repository], log_file=tmp_path / "triton.log")
    with server:
        regions = list(Path("/dev/shm").glob(f"{server.shm_prefix}*"))
        assert regions, "the Python backend's regions carry the launcher's prefix"
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        assert all(region.exists() for region in regions)  # what a kill leaves
    assert list(Path("/dev/shm").glob(f"{server.shm_prefix}*")) == []


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:
        return []


def test_triton_keeps_its_launchers_priority_and_stops_when_the_launcher_is_killed(tmp_path):
    """A launcher at `nice 7` starts Triton at that priority: its own session would otherwise put it
    in a new scheduler autogroup at normal priority, beside whatever the launcher wanted to yield
    to (Linux with autogroups, as here). A launcher killed without cleanup (SIGKILL) must not
    leave Triton running."""
    import subprocess
    import sys
    import time

    repository = repository_of(tmp_path / "repository", "identity")
    script = (
        "import sys, time\n"
        "from loadtests.server import LocalTriton\n"
        f"t = LocalTriton([r'{repository}'], log_file=r'{tmp_path / 'triton.log'}')\n"
        "t.start()\n"
        "print(t.process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    command = ["nice", "-n", "7", sys.executable, "-c", script]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as launcher:
        triton_pid = int(launcher.stdout.readline())
        assert psutil.pid_exists(triton_pid)
        assert psutil.Process(triton_pid).nice() == 7
        autogroup = Path(f"/proc/{triton_pid}/autogroup")
        group = autogroup.read_text() if autogroup.exists() else None
        launcher.kill()
        launcher.wait(timeout=10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and psutil.pid_exists(triton_pid):
        if psutil.Process(triton_pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.2)
    assert not psutil.pid_exists(triton_pid) or psutil.Process(triton_pid).status() == psutil.STATUS_ZOMBIE
    if group is None:
        pytest.skip("this kernel has no scheduler autogroups (/proc/PID/autogroup)")
    assert group.split()[-2:] == ["nice", "7"], group
