"""The Kubernetes manifests (k8s/) and the image (Dockerfile), checked without a cluster.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/server/test_k8s.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadtests.server import LocalTriton, TritonPorts
from tests.helpers import THROWAWAY_STOP_S, model_stats, read_summary, repository_of, run_against_triton
from tests.unit.server import test_k8s as unit_k8s
from tests.unit.server.test_k8s import (
    HEADLESS_TRACING,
    K8S,
    OWN_LOCUSTFILE,
    TARGETS,
    Pod,
    _configmap_data,
    _containers,
    _find,
    _flag_values,
    _gke_md,
    _locust_conf,
    _receiver_url,
    _running_master,
    _triton,
    _tritonserver_args,
    needs_kubectl,
)

objects = unit_k8s.objects  # a fixture of that module: pytest finds fixtures by name
renders = unit_k8s.renders  # a fixture of that module: pytest finds fixtures by name

# Triton's GPU metrics (docs/user_guide/metrics.md, "GPU Metrics"); the local Triton has no GPU
# and does not serve them, every other nv_* name is checked against its live /metrics.
TRITON_GPU_METRICS = {
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
    "nv_energy_consumption",
}


# --- Triton: ports and health endpoints, against the local server -------------------------


@needs_kubectl
def test_triton_probes_and_ports_match_the_local_triton(objects, triton):
    """The image's version is checked against NVIDIA's table in
    test_triton_image_is_a_patched_release_and_its_version_comes_from_nvidias_table."""
    import urllib.request

    for target in TARGETS:
        deployment = _find(objects[target], "Deployment", "triton")
        container = _containers(deployment)[0]
        assert {p["containerPort"] for p in container["ports"]} == {8000, 8001, 8002}
        assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
        assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
        if target.startswith(("overlays/gke", "headless/gke")):
            assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for path in ("/v2/health/ready", "/v2/health/live"):
        with urllib.request.urlopen(f"{triton.http_url}{path}", timeout=10) as response:
            assert response.status == 200


@needs_kubectl
def test_cpu_overlay_triton_args_and_model_volume_start_the_same_tritonserver(objects, tmp_path):
    """The rendered Triton arguments and the /models layout of overlays/cpu (the identity
    model's ConfigMap volume on /models/identity, with the kubelet's ..data symlinks), given to
    the tritonserver the suite bundles (2.51.0, NVIDIA's 24.10; the cluster image is newer,
    and every flag the manifests pass exists in both)."""
    import numpy as np
    import tritonclient.http as httpclient

    docs = objects["overlays/cpu"]
    pod = Pod(_find(docs, "Deployment", "triton"), docs, tmp_path / "triton")
    server_args = pod.args[pod.args.index("tritonserver") + 1 :]  # after the shell's $0
    # The launcher sets the repository, free ports and loopback addresses itself.
    own = ("--model-repository=", "--http-port=", "--grpc-port=", "--metrics-port=")
    (repository,) = [a.split("=", 1)[1] for a in server_args if a.startswith("--model-repository=")]
    assert repository == "/models"
    extra = [a for a in server_args if not a.startswith(own)]
    models = pod.mounts["/models"]
    with LocalTriton(
        [models], log_file=tmp_path / "triton.log", extra_args=extra, stop_timeout_s=THROWAWAY_STOP_S
    ) as server:
        client = httpclient.InferenceServerClient(server.http_address)
        try:
            assert [m["name"] for m in client.get_model_repository_index()] == ["identity"]
            data = np.arange(32, dtype=np.float32).reshape(2, 16)
            tensor = httpclient.InferInput("INPUT0", [2, 16], "FP32")
            tensor.set_data_from_numpy(data)
            result = client.infer("identity", [tensor]).as_numpy("OUTPUT0")
        finally:
            client.close()
    assert np.array_equal(result, data)


def test_monitoring_uses_metric_names_triton_and_the_suite_serve(triton):
    """Every nv_* name in the dashboard and the autoscaling rules is a real Triton metric, and
    every triton_loadtest_* name one the suite's exporter (--prometheus-port) serves."""
    import urllib.request

    from loadtests.run.exporter import render
    from loadtests.run.live_snapshot import LiveSnapshot

    with urllib.request.urlopen(triton.metrics_url, timeout=10) as response:
        served = set(re.findall(r"^(nv_[a-z_]+)", response.read().decode(), re.MULTILINE))
    exported = set(re.findall(r"^# TYPE (triton_loadtest_[a-z_]+) ", render(LiveSnapshot()), re.MULTILINE))
    dashboard = (K8S / "base" / "monitoring" / "grafana-dashboard.json").read_text()
    json.loads(dashboard)
    autoscaling = (K8S / "components" / "triton-autoscaling" / "prometheus-adapter-values.yaml").read_text()
    used = set(re.findall(r"\b(nv_[a-z_]*[a-z])\b", dashboard + autoscaling))
    assert {"nv_inference_queue_duration_us", "nv_inference_count", "nv_gpu_utilization"} <= used
    assert used - served - TRITON_GPU_METRICS == set()
    client = set(re.findall(r"\b(triton_loadtest_[a-z_]*[a-z])\b", dashboard))
    assert {"triton_loadtest_latency_microseconds", "triton_loadtest_requests_total"} <= client
    assert client - exported == set()


# --- the headless Job, run as local processes -----------------------------------------------


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _scrape_while_running(process: subprocess.Popen, url: str, timeout_s: float = 120) -> list[str]:
    """Every /metrics page read, twice a second, until the process ends."""
    import time
    import urllib.request

    pages, deadline = [], time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                pages.append(response.read().decode())
        except OSError:
            pass
        time.sleep(0.5)
    return pages


@dataclass
class HeadlessRun:
    master: Pod
    output: str  # the master's
    master_code: int
    worker_codes: list[int]
    scraped: list[str]  # the master's /metrics pages while it ran
    workers: int


def _run_headless_jobs(docs: list[dict], triton, tmp_path: Path) -> HeadlessRun:
    """Exactly the rendered Job commands, with only these changes: hosts and ports -> loopback,
    the image's paths -> this checkout and temporary directories, a 4 s run with 4 users."""
    master_job = _find(docs, "Job", "locust-master-headless")
    worker_job = _find(docs, "Job", "locust-worker-headless")
    free = TritonPorts.free()
    zmq_port, metrics_port = free.http, free.grpc
    hosts = {
        "triton-headless:8000": triton.http_address,
        "triton-headless:8001": triton.grpc_address,
        "triton-headless:8002": triton.metrics_address,
        "locust-master": "127.0.0.1",
        "5557": str(zmq_port),
        "9646": str(metrics_port),
        "0.0.0.0": "127.0.0.1",
        # The GKE Jobs' --upload bucket (components/gke-upload): a local directory instead.
        "gs://your-bucket/runs": f"file://{tmp_path / 'bucket'}",
    }
    short = {"run-time": "4s", "users": "4", "spawn-rate": "4", "expect-workers-max-wait": "60"}

    def conf(text: str) -> str:
        lines = []
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and not line.lstrip().startswith("#"):
                value = short.get(key.strip(), hosts.get(value.strip(), value.strip()))
                line = f"{key.strip()} = {value}"
            lines.append(line)
        return "\n".join(lines) + "\n"

    def rewrite(token: str) -> str:
        return hosts.get(token, token)

    master = Pod(master_job, docs, tmp_path / "master", rewrite, conf)
    workers = [
        Pod(worker_job, docs, tmp_path / f"worker-{i}", rewrite, conf) for i in range(worker_job["spec"]["parallelism"])
    ]
    # Loopback only: the pod listens on all interfaces, a test machine must not.
    master_command = [*master.command(), "--master-bind-host", "127.0.0.1"]
    processes = [
        subprocess.Popen(
            master_command,
            cwd=master.cwd,
            env=master.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    ]
    try:
        for worker in workers:
            processes.append(
                subprocess.Popen(
                    worker.command(),
                    cwd=worker.cwd,
                    env=worker.environment(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    stdin=subprocess.DEVNULL,
                )
            )
        # What Prometheus would scrape from the master while the test runs.
        scraped = _scrape_while_running(processes[0], f"http://127.0.0.1:{metrics_port}/metrics")
        output, _ = processes[0].communicate(timeout=180)
        worker_codes = [p.wait(timeout=60) for p in processes[1:]]
    finally:
        for process in processes:
            _stop(process)
    return HeadlessRun(master, output, processes[0].returncode, worker_codes, scraped, len(workers))


@needs_kubectl
@pytest.mark.parametrize("overlay", ["cpu", "gke-t4"])
def test_headless_job_commands_run_locally_and_merge_the_workers_requests(objects, triton, tmp_path, overlay):
    """The headless Jobs' commands as local processes (`_run_headless_jobs`)."""
    docs = objects[f"headless/{overlay}"]
    model = _locust_conf(docs)["model"]
    before = model_stats(triton.http_address, model)
    run = _run_headless_jobs(docs, triton, tmp_path)
    after = model_stats(triton.http_address, model)
    master, output = run.master, run.output

    # The Job's exit code is the master's; the workers' Job completes when each exits 0,
    # which a worker does only after the master's quit message (so every worker was connected).
    assert run.master_code == 0, output[-4000:]
    assert run.worker_codes == [0] * run.workers
    # Prometheus could scrape the master while it ran: the worker gauge with every worker connected
    # (from before the test starts to its end) and the request counter (from the workers' first
    # report, 3 s into the 4-s test, to the master's exit). Not both on one page: on a busy host no
    # page fell in the second or so they overlap (fresh66, gke-t4).
    assert any(f"\ntriton_loadtest_workers {run.workers}\n" in page for page in run.scraped), run.scraped[-1:]
    assert any("triton_loadtest_requests_total{" in page for page in run.scraped), run.scraped[-1:]
    (run_dir,) = (master.mounts["/app/runs"]).iterdir()  # the run volume, default name
    assert (run_dir / "config.json").exists()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["options"]["triton_grpc"] == triton.grpc_address  # locust.conf configured the run
    summary = read_summary(run_dir)
    assert summary["endpoints"], output[-3000:]
    for endpoint in summary["endpoints"]:
        assert endpoint["model"] == model and endpoint["protocol"] == "grpc"
        assert endpoint["requests"] > 0 and endpoint["failures"] == 0, endpoint
    requests = sum(e["requests"] for e in summary["endpoints"])
    inferences = sum(e["inferences"] for e in summary["endpoints"])
    assert requests == after["requests"] - before["requests"]
    assert inferences == after["inferences"] - before["inferences"]
    if overlay.startswith("gke"):  # --upload copied the whole run directory to the "bucket"
        copied = tmp_path / "bucket" / run_dir.name
        assert {p.relative_to(copied): p.read_bytes() for p in copied.rglob("*") if p.is_file()} == {
            p.relative_to(run_dir): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()
        }


@needs_kubectl
def test_an_own_locustfile_runs_on_the_headless_master_and_workers(objects, triton, tmp_path):
    """components/own-locustfile: the master and both workers load the component's locustfile (its
    ConfigMap, mounted where the pods mount it) and run its class alone; every request its tasks
    name is in the master's run directory, as Triton counted them."""
    docs = objects[OWN_LOCUSTFILE]
    data = _configmap_data(docs, next(d["metadata"]["name"] for d in docs if d["metadata"]["name"].startswith(
        "locust-locustfile")))  # fmt: skip
    assert data["locustfile.py"] == (K8S / "components" / "own-locustfile" / "locustfile.py").read_text()
    before = model_stats(triton.http_address, "identity")
    run = _run_headless_jobs(docs, triton, tmp_path)
    after = model_stats(triton.http_address, "identity")
    assert run.master_code == 0, run.output[-4000:]
    assert run.worker_codes == [0] * run.workers
    (run_dir,) = (run.master.mounts["/app/runs"]).iterdir()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["user_classes"] == ["Journey"], config["user_classes"]
    summary = read_summary(run_dir)
    endpoints = {e["name"]: e for e in summary["endpoints"]}
    assert sorted(endpoints) == ["identity x1", "identity x8"], run.output[-3000:]
    assert all(e["protocol"] == "grpc" and e["failures"] == 0 for e in endpoints.values())
    assert endpoints["identity x8"]["inferences"] == 8 * endpoints["identity x8"]["requests"]
    assert sum(e["requests"] for e in endpoints.values()) == after["requests"] - before["requests"]
    assert sum(e["inferences"] for e in endpoints.values()) == after["inferences"] - before["inferences"]
    assert summary["load_generator"]["workers"] == run.workers


# NVIDIA's container release -> Triton version, transcribed from the published table (the
# release notes' "Triton Inference Server Container Versions" and the server repository's
# releases, "Release 2.N corresponding to NGC container YY.MM"; build.py's
# triton_container_version at each v2.N tag). From 25.07 the monthly step breaks: 25.07 is
# the 2.59.1 security release (August 2025), so YY.MM no longer gives 2.N by arithmetic.
NGC_TRITON_RELEASES = {
    "24.10": "2.51.0",
    "24.11": "2.52.0",
    "24.12": "2.53.0",
    "25.01": "2.54.0",
    "25.02": "2.55.0",
    "25.03": "2.56.0",
    "25.04": "2.57.0",
    "25.05": "2.58.0",
    "25.06": "2.59.0",
    "25.07": "2.59.1",
    "25.08": "2.60.0",
    "25.09": "2.61.0",
    "25.10": "2.62.0",
    "25.11": "2.63.0",
    "25.12": "2.64.0",
    "26.01": "2.65.0",
    "26.02": "2.66.0",
    "26.03": "2.67.0",
    "26.04": "2.68.0",
    "26.05": "2.69.0",
    "26.06": "2.70.0",
    "26.07": "2.71.0",
}
# NVIDIA's August 2025 Triton security bulletin: fixed in 25.07 (2.59.1) and later.
FIRST_PATCHED_TRITON = (2, 59, 1)


@needs_kubectl
def test_triton_image_is_a_patched_release_and_its_version_comes_from_nvidias_table(objects, triton):
    import tritonclient.http as httpclient

    for target in TARGETS:
        container = _triton(objects[target])
        image, _, tag = container["image"].rpartition(":")
        assert image == "nvcr.io/nvidia/tritonserver"
        release = re.fullmatch(r"(\d\d\.\d\d)-py3", tag).group(1)
        assert release in NGC_TRITON_RELEASES, f"{release}: not in NVIDIA's published table"
        version = tuple(int(x) for x in NGC_TRITON_RELEASES[release].split("."))
        assert version >= FIRST_PATCHED_TRITON, f"{tag} is Triton {version}, before the August 2025 fixes"
        # The comment in triton.yaml and docs/guides/gke.md name the same version.
        assert re.search(rf"{re.escape(tag)}`? \(Triton {re.escape(NGC_TRITON_RELEASES[release])}\)", _gke_md())
    # The local server (nvidia-pytriton) is the table's 24.10 row: what the cpu-overlay
    # argument test below runs the rendered arguments with.
    client = httpclient.InferenceServerClient(triton.http_address)
    try:
        assert client.get_server_metadata()["version"] == NGC_TRITON_RELEASES["24.10"]
    finally:
        client.close()


@needs_kubectl
def test_tracing_component_flags_trace_a_run_on_the_local_triton(objects, tmp_path):
    """Triton started with the rendered trace flags (the receiver's address -> loopback), a run with
    the master's rendered trace options: every request the client sampled is joined."""
    docs = objects[HEADLESS_TRACING]
    host, port = _receiver_url(docs)
    local = f"127.0.0.1:{TritonPorts.free().http}"
    trace = [a for a in _tritonserver_args(_triton(docs)) if a.startswith("--trace-config")]
    extra = [a.replace(f"{host}:{port}", local) for a in trace]
    (master,) = _containers(_running_master(docs))
    (sample,) = _flag_values(master["args"], "--trace-sample")
    options = ["--model", "identity", "--trace-sample", sample, "--trace-receiver", local]
    with LocalTriton(
        [repository_of(tmp_path / "models", "identity")], extra_args=extra, stop_timeout_s=THROWAWAY_STOP_S
    ) as server:
        run = run_against_triton(server, tmp_path / "run", ["TritonHttpUser"], options, models=("identity",), users=1)
    traces = run.summary["traces"]
    (endpoint,) = run.summary["endpoints"]
    assert traces["sampled_by"] == "client" and traces["triton_rate"] == round(100 / float(sample.rstrip("%")))
    assert abs(traces["client_requests"] - endpoint["requests"] / traces["triton_rate"]) <= 1
    # A request cut at the stop may go unjoined, at most one (HTTP exports every trace: tracing.md).
    assert traces["joined"] >= max(1, traces["client_requests"] - 1), traces
