"""`python -m loadtests serve` as a user runs it: URLs, clean stop, one-line errors for bad setup.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/server/test_serve_cli.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request

import psutil

from loadtests.server import LocalTriton, TritonPorts
from tests.helpers import REPO_ROOT, THROWAWAY_STOP_S, repository_of, run_cli
from tests.unit.server.test_serve_cli import assert_one_line_error, serve_args

STUB_NAME = "triton_python_backend_stub"


def processes_with_arg(argument: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if argument in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def test_serve_prints_urls_and_stops_everything_on_sigterm(tmp_path):
    ports = TritonPorts.free()
    log = tmp_path / "triton.log"
    repository = repository_of(tmp_path / "repository", "identity", "text_reverse")  # Python stubs to stop too
    with subprocess.Popen(
        [
            sys.executable,
            *serve_args(ports, "--model-repository", str(repository), "--log-file", str(log), "--latency-summaries"),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C" in line:
                break
        output = "".join(lines)
        assert f"http://127.0.0.1:{ports.http}" in output
        assert f"grpc://127.0.0.1:{ports.grpc}" in output
        assert f"http://127.0.0.1:{ports.metrics}/metrics" in output
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.http}/v2/health/ready") as response:
            assert response.status == 200
        # --latency-summaries: Triton's own latency quantiles per model (the report's Triton's metrics).
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics}/metrics") as response:
            assert (
                'nv_inference_request_summary_us{model="identity",version="1",quantile="0.99"}'
                in response.read().decode()
            )
        server = processes_with_arg(f"--http-port={ports.http}")
        stubs = [p for p in processes_with_arg(STUB_NAME) if p.ppid() in {s.pid for s in server}]
        assert server and stubs

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        _gone, alive = psutil.wait_procs(server + stubs, timeout=10)
        assert alive == []
    assert log.exists() and "Started HTTPService" in log.read_text()


def test_model_that_fails_to_load_shows_tritons_reason(tmp_path):
    model_dir = tmp_path / "repo" / "broken" / "1"
    model_dir.mkdir(parents=True)
    (model_dir.parent / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        'output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
    )
    (model_dir / "model.py").write_text(
        "class TritonPythonModel:\n"
        "    def initialize(self, args):\n"
        "        raise RuntimeError('weights file corrupt: checksum mismatch')\n"
    )
    result = run_cli(serve_args(TritonPorts.free(), "--model-repository", str(tmp_path / "repo")))
    assert_one_line_error(result, "tritonserver exited", "broken", "weights file corrupt: checksum mismatch")


def test_users_own_python_model_imports_the_suites_packages(tmp_path):
    """A model that is not ours (no sys.path tricks) imports the venv's numpy and onnxruntime."""
    import numpy
    import onnxruntime
    import tritonclient.http as httpclient

    model_dir = tmp_path / "repo" / "env_probe" / "1"
    model_dir.mkdir(parents=True)
    (model_dir.parent / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
        'output [ { name: "versions" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
    )
    (model_dir / "model.py").write_text(
        "import numpy as np\n"
        "import onnxruntime\n"
        "import triton_python_backend_utils as pb_utils\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        text = f'{np.__version__} {onnxruntime.__version__}'.encode()\n"
        "        out = pb_utils.Tensor('versions', np.array([text], dtype=object))\n"
        "        return [pb_utils.InferenceResponse([out]) for _ in requests]\n"
    )
    with LocalTriton([tmp_path / "repo"], log_file=tmp_path / "triton.log", stop_timeout_s=THROWAWAY_STOP_S) as server:
        client = httpclient.InferenceServerClient(server.http_address)
        tensor = httpclient.InferInput("x", [1], "FP32")
        tensor.set_data_from_numpy(numpy.zeros(1, dtype=numpy.float32))
        reported = client.infer("env_probe", [tensor]).as_numpy("versions")[0]
        client.close()
    assert reported.decode() == f"{numpy.__version__} {onnxruntime.__version__}"
