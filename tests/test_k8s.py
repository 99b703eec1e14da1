"""The Kubernetes manifests (k8s/) and the image (Dockerfile), checked without a cluster.

- Every kustomization renders with `kubectl kustomize`: the three overlays, their headless
  variants, and one overlay with every optional component added.
- Every rendered object validates against the Kubernetes 1.30 schemas (kubernetes-validate
  --strict); the CRD objects (PodMonitoring, ServiceMonitor) select pods and ports that exist.
- checkov reports no failed check; every skip is an annotation with its reason.
- Security defaults on every pod; Locust CPU requests equal limits in whole cores; namespaces.
- The master's and workers' container arguments, and locust.conf, parse with the suite's own
  Locust parser (the locustfile's options registered), with no unknown argument.
- The headless Job's master and workers commands run as local processes (hosts and ports
  rewritten to loopback, run time shortened) against the local Triton, and the master's run
  directory holds every request the workers sent, as Triton counted them.
- The Dockerfile lints clean (hadolint) and installs the same pinned files as `make setup`.

kubernetes-validate, checkov and hadolint live in .venv-k8s (k8s/install_tools.sh): checkov
pins `packaging` below what pytest needs, so they cannot share .venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts
from tests.helpers import REPO_ROOT, model_stats, read_summary

K8S = REPO_ROOT / "k8s"
TOOLS = REPO_ROOT / ".venv-k8s" / "bin"
KUBECTL = shutil.which("kubectl")
NAMESPACE = "triton-loadtest"
KUBERNETES_VERSION = "1.30.0"
OVERLAYS = ("gke-t4", "gke-l4", "cpu")
TARGETS = tuple(f"overlays/{o}" for o in OVERLAYS) + tuple(f"headless/{o}" for o in OVERLAYS)
OPTIONAL_COMPONENTS = ("prometheus-operator", "triton-autoscaling", "ui-basic-auth")
ALL_COMPONENTS = "all-components"  # overlays/gke-t4 plus every optional component
WORKLOAD_KINDS = ("Deployment", "Job")
LOCUST_COMPONENTS = ("locust-master", "locust-worker")
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

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH: it renders k8s/ (kubectl kustomize)")


def _tool(name: str) -> str:
    path = TOOLS / name
    if not path.exists():
        pytest.skip(f"{path} missing: run `bash k8s/install_tools.sh` (kubernetes-validate, checkov, hadolint)")
    return str(path)


# --- rendering --------------------------------------------------------------------------


def _kustomize(directory: Path) -> str:
    result = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, str]:
    """Rendered YAML of every target, and of overlays/gke-t4 with every optional component."""
    if KUBECTL is None:
        pytest.skip("kubectl not on PATH: it renders k8s/ (kubectl kustomize)")
    out = {target: _kustomize(K8S / target) for target in TARGETS}
    # kustomize accepts relative paths only, and resources outside the kustomization's root.
    everything = tmp_path_factory.mktemp("all-components")
    relative = Path(os.path.relpath(K8S, everything))
    (everything / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"namespace: {NAMESPACE}\nresources:\n  - {relative / 'overlays/gke-t4'}\ncomponents:\n"
        + "".join(f"  - {relative / 'components' / c}\n" for c in OPTIONAL_COMPONENTS)
    )
    out[ALL_COMPONENTS] = _kustomize(everything)
    return out


@pytest.fixture(scope="module")
def objects(renders) -> dict[str, list[dict]]:
    return {name: [doc for doc in yaml.safe_load_all(text) if doc] for name, text in renders.items()}


def _find(docs: list[dict], kind: str, name: str) -> dict:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def _workloads(docs: list[dict]) -> list[dict]:
    return [d for d in docs if d["kind"] in WORKLOAD_KINDS]


def _containers(workload: dict) -> list[dict]:
    return workload["spec"]["template"]["spec"]["containers"]


def _component(doc: dict) -> str:
    return doc["metadata"].get("labels", {}).get("app.kubernetes.io/component", "")


def _configmap_data(docs: list[dict], name: str) -> dict[str, str]:
    return _find(docs, "ConfigMap", name)["data"]


def _locust_conf(docs: list[dict]) -> dict[str, str]:
    """The values of the locust.conf the master mounts."""
    volumes = _find(docs, "Deployment", "locust-master")["spec"]["template"]["spec"]["volumes"]
    (name,) = [v["configMap"]["name"] for v in volumes if "configMap" in v]
    return _conf_values(_configmap_data(docs, name)["locust.conf"])


def _conf_values(text: str) -> dict[str, str]:
    """`key = value` lines of a locust.conf (comments and blank lines skipped)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_every_kustomization_renders(renders, objects, target):
    kinds = {d["kind"] for d in objects[target]}
    assert {"Namespace", "Deployment", "Service", "ConfigMap", "NetworkPolicy", "PersistentVolumeClaim"} <= kinds
    assert ("Job" in kinds) == target.startswith("headless/")


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_every_object_validates_against_kubernetes_schemas(renders, target, tmp_path):
    tool = _tool("kubernetes-validate")
    path = tmp_path / "rendered.yaml"
    path.write_text(renders[target])
    result = subprocess.run(
        [tool, "-k", KUBERNETES_VERSION, "--strict", "--quiet", str(path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # CRDs have no schema here: they are only warned about, and checked in test_crd_objects_*.
    warned = set(re.findall(r"Couldn't find schema for kind (\w+)", result.stdout + result.stderr))
    assert warned <= {"PodMonitoring", "ServiceMonitor"}


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_checkov_reports_no_failed_check(renders, target, tmp_path):
    tool = _tool("checkov")
    path = tmp_path / "rendered.yaml"
    path.write_text(renders[target])
    # --skip-download: no calls to the vendor's API (this machine has no internet).
    result = subprocess.run(
        [tool, "-f", str(path), "--framework", "kubernetes", "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(result.stdout)
    report = report[0] if isinstance(report, list) else report
    failed = [(c["check_id"], c["resource"], c["check_name"]) for c in report["results"]["failed_checks"]]
    assert failed == [], failed
    assert result.returncode == 0, result.stderr[-2000:]
    assert report["summary"]["passed"] > 100 and report["summary"]["parsing_errors"] == 0
    for skipped in report["results"]["skipped_checks"]:
        reason = skipped["check_result"].get("suppress_comment", "")
        assert len(reason) > 30, f"{skipped['check_id']} on {skipped['resource']} is skipped without a reason"


# --- invariants of the rendered objects ---------------------------------------------------


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_every_pod_has_the_security_defaults(objects, target):
    for workload in _workloads(objects[target]):
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        security = pod["securityContext"]
        assert security["runAsNonRoot"] is True and security["runAsUser"] >= 10000, name
        assert security["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert context.get("privileged", False) is False, name
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{name} {bound}"
            # The root filesystem is read-only: /tmp must be an explicit writable volume.
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert "emptyDir" in volumes[mounts["/tmp"]], name


@needs_kubectl
@pytest.mark.parametrize("target", TARGETS)
def test_locust_pods_get_whole_cores_and_workers_match_expect_workers(objects, target):
    docs = objects[target]
    for workload in _workloads(docs):
        if _component(workload) in LOCUST_COMPONENTS:
            resources = workload["spec"]["template"]["spec"]["containers"][0]["resources"]
            assert resources["requests"] == resources["limits"], workload["metadata"]["name"]
            assert re.fullmatch(r"[1-9][0-9]*", str(resources["limits"]["cpu"])), "one Locust process, whole cores"
    master = _find(docs, "Deployment", "locust-master")
    expect = int(_locust_conf(docs)["expect-workers"])
    workers = _find(docs, "Deployment", "locust-worker")
    if target.startswith("headless/"):
        job = _find(docs, "Job", "locust-worker-headless")
        assert job["spec"]["parallelism"] == job["spec"]["completions"] == expect
        assert workers["spec"]["replicas"] == master["spec"]["replicas"] == 0, "one master at a time"
        # The Jobs run the image the overlay set, not the unresolved placeholder.
        images = {c["image"] for w in _workloads(docs) if _component(w) in LOCUST_COMPONENTS for c in _containers(w)}
        assert len(images) == 1 and ":" in images.pop()
    else:
        assert workers["spec"]["replicas"] == expect


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_every_namespaced_object_is_in_the_suite_namespace(objects, target):
    for doc in objects[target]:
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{doc['kind']}/{doc['metadata']['name']}"


def _matches(selector: dict, labels: dict) -> bool:
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        present = expression["key"] in labels
        value = labels.get(expression["key"])
        if expression["operator"] == "In" and value not in expression["values"]:
            return False
        if expression["operator"] == "NotIn" and value in expression["values"]:
            return False
        if expression["operator"] == "Exists" and not present:
            return False
    return True


def _pod_templates(docs: list[dict]) -> list[tuple[str, dict, dict]]:
    """(workload name, pod labels, pod spec) of every workload."""
    return [
        (w["metadata"]["name"], w["spec"]["template"]["metadata"]["labels"], w["spec"]["template"]["spec"])
        for w in _workloads(docs)
    ]


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_services_and_network_policies_select_real_pods(objects, target):
    docs = objects[target]
    pods = _pod_templates(docs)
    for service in (d for d in docs if d["kind"] == "Service"):
        selected = [
            (n, spec) for n, labels, spec in pods if _matches({"matchLabels": service["spec"]["selector"]}, labels)
        ]
        assert selected, f"Service {service['metadata']['name']} selects no pod"
        declared = {p["containerPort"] for _, spec in selected for c in spec["containers"] for p in c.get("ports", [])}
        names = {p.get("name") for _, spec in selected for c in spec["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in declared | names, f"{service['metadata']['name']}:{port['name']}"
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    for name, labels, _ in pods:
        covering = [p for p in policies if _matches(p["spec"]["podSelector"], labels)]
        assert any(p["metadata"]["name"] == "default-deny" for p in covering), name
    # Only Locust may reach Triton's inference ports.
    triton = _find(docs, "NetworkPolicy", "triton")
    inference_peers = [
        rule["from"] for rule in triton["spec"]["ingress"] if {p["port"] for p in rule["ports"]} & {8000, 8001}
    ]
    locust_only = {"key": "app.kubernetes.io/component", "operator": "In", "values": list(LOCUST_COMPONENTS)}
    assert inference_peers == [[{"podSelector": {"matchExpressions": [locust_only]}}]]


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, ALL_COMPONENTS])
def test_crd_objects_select_pods_and_ports_that_exist(objects, target):
    """PodMonitoring and ServiceMonitor have no schema here: check what they point at."""
    docs = objects[target]
    for monitor in (d for d in docs if d["kind"] in ("PodMonitoring", "ServiceMonitor")):
        selector = monitor["spec"]["selector"]
        if monitor["kind"] == "PodMonitoring":
            assert monitor["apiVersion"] == "monitoring.googleapis.com/v1"
            selected = [spec for _, labels, spec in _pod_templates(docs) if _matches(selector, labels)]
            ports = {p.get("name") for s in selected for c in s["containers"] for p in c.get("ports", [])}
            ports |= {p["containerPort"] for s in selected for c in s["containers"] for p in c.get("ports", [])}
        else:
            assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
            services = [s for s in docs if s["kind"] == "Service" and _matches(selector, s["metadata"]["labels"])]
            selected = services
            ports = {p["name"] for s in services for p in s["spec"]["ports"]}
        assert selected, f"{monitor['kind']}/{monitor['metadata']['name']} selects nothing"
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in ports
            assert endpoint["path"] == "/metrics"


@needs_kubectl
def test_gke_l4_runs_the_same_locust_as_gke_t4(objects):
    """So the local runs below need not repeat gke-l4: only Triton's node and GPU differ."""

    def locust_side(docs):
        workloads = [d for d in docs if d["kind"] in WORKLOAD_KINDS and _component(d) in LOCUST_COMPONENTS]
        return workloads + [d for d in docs if d["metadata"]["name"].startswith("locust-config")]

    for mode in ("overlays", "headless"):
        assert locust_side(objects[f"{mode}/gke-l4"]) == locust_side(objects[f"{mode}/gke-t4"])


@needs_kubectl
def test_cpu_overlay_serves_the_tested_identity_model(objects):
    docs = objects["overlays/cpu"]
    data = next(d["data"] for d in docs if d["metadata"]["name"].startswith("triton-model-identity"))
    assert data["config.pbtxt"] == (TEST_REPOSITORY / "identity" / "config.pbtxt").read_text()
    assert data["model.py"] == (TEST_REPOSITORY / "identity" / "1" / "model.py").read_text()
    triton = _find(docs, "Deployment", "triton")
    config = next(d["data"] for d in docs if d["metadata"]["name"].startswith("triton-config"))
    assert config["model-repository"] == "/models"
    mounts = {m["mountPath"] for m in _containers(triton)[0]["volumeMounts"]}
    assert {"/models", "/models/identity"} <= mounts


# --- Triton: the image matches the server the suite tests against ---------------------------


@needs_kubectl
def test_triton_image_probes_and_ports_match_the_local_triton(objects, triton):
    import urllib.request

    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(triton.http_address)
    try:
        version = client.get_server_metadata()["version"]  # e.g. 2.51.0
    finally:
        client.close()
    for target in TARGETS:
        deployment = _find(objects[target], "Deployment", "triton")
        container = _containers(deployment)[0]
        image, _, tag = container["image"].rpartition(":")
        assert image == "nvcr.io/nvidia/tritonserver"
        # NGC release YY.MM ships Triton 2.N.0 with N = 30 + 12 * (YY - 23) + (MM - 1).
        year, month = (int(x) for x in re.fullmatch(r"(\d\d)\.(\d\d)-py3", tag).groups())
        assert f"2.{30 + 12 * (year - 23) + month - 1}.0" == version
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
    the tritonserver the suite bundles, the same 2.51.0 as NVIDIA's 24.10 image."""
    import numpy as np
    import tritonclient.http as httpclient

    docs = objects["overlays/cpu"]
    pod = Pod(_find(docs, "Deployment", "triton"), docs, tmp_path / "triton")
    assert pod.args[0] == "tritonserver"
    # The launcher sets the repository, free ports and loopback addresses itself.
    own = ("--model-repository=", "--http-port=", "--grpc-port=", "--metrics-port=")
    (repository,) = [a.split("=", 1)[1] for a in pod.args if a.startswith("--model-repository=")]
    assert repository == "/models"
    extra = [a for a in pod.args[1:] if not a.startswith(own)]
    models = pod.mounts["/models"]
    with LocalTriton([models], log_file=tmp_path / "triton.log", extra_args=extra) as server:
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

    from loadtests.exporter import render
    from loadtests.recording.live import LiveSnapshot

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


# --- the containers' arguments, parsed by the suite's own parser ----------------------------

PARSE = textwrap.dedent(
    """
    import importlib.util, json, os, sys
    import locust  # noqa: F401  (gevent monkey-patching first, as the locust command does)
    sys.path.insert(0, os.path.dirname(sys.argv[1]))  # as Locust does for a locustfile
    spec = importlib.util.spec_from_file_location("locustfile", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # registers the suite's options (init_command_line_parser)
    from locust.argument_parser import get_parser
    results = []
    for case in json.load(sys.stdin):
        os.environ.update(case["env"])
        parser = get_parser(default_config_files=[])
        options, unknown = parser.parse_known_args(case["args"])
        for key in case["env"]:
            del os.environ[key]
        keep = (str, int, float, bool, list, type(None))
        results.append({"unknown": unknown, "options": {k: v for k, v in vars(options).items() if isinstance(v, keep)}})
    json.dump(results, sys.stdout)
    """
)


def _dockerfile() -> tuple[list[str], str]:
    """The image's ENTRYPOINT and final WORKDIR, read from the Dockerfile."""
    text = (REPO_ROOT / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, re.MULTILINE).group(1))
    workdir = re.findall(r"^WORKDIR\s+(\S+)", text, re.MULTILINE)[-1]
    return entrypoint, workdir


def _write_config_map_volume(local: Path, data: dict[str, str], volume: dict, conf=None) -> None:
    """A ConfigMap volume as the kubelet lays it out: the files in a timestamped directory,
    `..data` pointing at it, and each top-level entry a symlink through `..data`."""
    stamped = local / "..2026_01_01_00_00_00.000000000"
    for item in volume.get("items") or [{"key": k, "path": k} for k in data]:
        text = data[item["key"]]
        if conf is not None and item["key"] == "locust.conf":
            text = conf(text)
        (stamped / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (stamped / item["path"]).write_text(text)
    (local / "..data").symlink_to(stamped.name)
    for entry in stamped.iterdir():
        (local / entry.name).symlink_to(Path("..data") / entry.name)


class Pod:
    """One container of a rendered workload, materialised as a local process.

    Its volumes become directories under `root` (ConfigMaps written out in the kubelet's
    layout, emptyDirs and PersistentVolumeClaims empty), its environment is resolved from the
    rendered ConfigMaps, and the image's ENTRYPOINT and WORKDIR come from the Dockerfile.
    """

    def __init__(self, workload: dict, docs: list[dict], root: Path, rewrite=lambda token: token, conf=None):
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        self.root = root
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        self.mounts = {}
        for mount in container.get("volumeMounts", []):
            local = root / mount["mountPath"].lstrip("/")
            local.mkdir(parents=True, exist_ok=True)
            self.mounts[mount["mountPath"]] = local
            config_map = volumes[mount["name"]].get("configMap")
            if config_map:
                _write_config_map_volume(local, _configmap_data(docs, config_map["name"]), config_map, conf)
        self.env = {}
        for variable in container.get("env", []):
            if "value" in variable:
                self.env[variable["name"]] = variable["value"]
            else:
                ref = variable["valueFrom"]["configMapKeyRef"]
                self.env[variable["name"]] = _configmap_data(docs, ref["name"])[ref["key"]]
        entrypoint, workdir = _dockerfile()
        # Kubernetes expands $(VAR) in command and args from the container's environment.
        expand = re.compile(r"\$\((\w+)\)")
        args = container.get("command", entrypoint) + container.get("args", [])
        self.args = [rewrite(expand.sub(lambda m: self.env.get(m.group(1), m.group(0)), a)) for a in args]
        self.cwd = root / workdir.lstrip("/")
        self.cwd.mkdir(parents=True, exist_ok=True)

    def local_path(self, path: str) -> str:
        for mount_path, local in self.mounts.items():
            if path == mount_path or path.startswith(mount_path + "/"):
                return str(local) + path[len(mount_path) :]
        return path

    def command(self) -> list[str]:
        """The container's command with the image's paths mapped to this machine."""
        args = list(self.args)
        assert args[0] == "locust", "the image's entrypoint is the locust command"
        # One mapping per argument: the repository itself may live under a path the pod
        # mounts (a CI clone in /tmp), so a mapped path must not be mapped again.
        mapped = [self._map(a) for a in args[1:]]
        return [sys.executable, "-m", "locust", *mapped]

    def _map(self, arg: str) -> str:
        if arg == "/app/locustfile.py":
            return str(REPO_ROOT / "locustfile.py")
        return self.local_path(arg) if arg.startswith("/") else arg

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
        env.update(self.env)
        return env


@needs_kubectl
@pytest.mark.parametrize("target", TARGETS)
def test_container_args_and_locust_conf_parse_with_the_suites_parser(objects, target, tmp_path):
    docs = objects[target]
    cases, names = [], []
    for workload in _workloads(docs):
        if _component(workload) not in LOCUST_COMPONENTS:
            continue
        pod = Pod(workload, docs, tmp_path / workload["metadata"]["name"])
        cases.append({"args": pod.command()[3:], "env": pod.env})
        names.append(f"{workload['kind']}/{workload['metadata']['name']}")
    assert len(cases) == (4 if target.startswith("headless/") else 2)
    result = subprocess.run(
        [sys.executable, "-c", PARSE, str(REPO_ROOT / "locustfile.py")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    conf = _locust_conf(docs)
    for name, parsed in zip(names, json.loads(result.stdout), strict=True):
        assert parsed["unknown"] == [], f"{name}: unknown to the suite's parser: {parsed['unknown']}"
        options = parsed["options"]
        assert options["user_classes"] and options["model"] == conf["model"], name
        assert options["triton_grpc"] == "triton:8001" and options["triton_http"] == "triton:8000", name
        if "master" in name:
            assert options["master"] and options["master_bind_port"] == 5557, name
            assert options["headless"] == ("headless" in name), name
            assert options["expect_workers"] == int(conf["expect-workers"]) and options["enable_rebalancing"], name
            # The suite binds to loopback by default; workers (other pods) and the kubelet's
            # HTTP probes reach the master by its pod IP.
            assert options["master_bind_host"] == "0.0.0.0", name
            assert options["web_host"] == "0.0.0.0", name
        else:
            assert options["worker"] and options["master_host"] == "locust-master" and options["master_port"] == 5557


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


@needs_kubectl
@pytest.mark.parametrize("overlay", ["cpu", "gke-t4"])
def test_headless_job_commands_run_locally_and_merge_the_workers_requests(objects, triton, tmp_path, overlay):
    """Exactly the rendered Job commands, with only these changes: hosts and ports -> loopback,
    the image's paths -> this checkout and temporary directories, a 4 s run with 4 users."""
    docs = objects[f"headless/{overlay}"]
    master_job = _find(docs, "Job", "locust-master-headless")
    worker_job = _find(docs, "Job", "locust-worker-headless")
    free = TritonPorts.free()
    zmq_port, metrics_port = free.http, free.grpc
    hosts = {
        "triton:8000": triton.http_address,
        "triton:8001": triton.grpc_address,
        "triton:8002": triton.metrics_address,
        "locust-master": "127.0.0.1",
        "5557": str(zmq_port),
        "9646": str(metrics_port),
        "0.0.0.0": "127.0.0.1",
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
    model = _conf_values((master.mounts["/etc/locust"] / "locust.conf").read_text())["model"]
    before = model_stats(triton.http_address, model)
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
    after = model_stats(triton.http_address, model)

    # The Job's exit code is the master's; the workers' Job completes when each exits 0,
    # which a worker does only after the master's quit message (so every worker was connected).
    assert processes[0].returncode == 0, output[-4000:]
    assert worker_codes == [0] * len(workers)
    # Prometheus could scrape the master during the test, with every worker connected.
    during = [page for page in scraped if "triton_loadtest_requests_total{" in page]
    assert any(f"\ntriton_loadtest_workers {len(workers)}\n" in page for page in during), scraped[-1:]
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


# --- the image -----------------------------------------------------------------------------


def test_dockerfile_lints_clean():
    tool = _tool("hadolint")
    result = subprocess.run([tool, str(REPO_ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_installs_what_the_tests_run_with():
    """Same pinned files and steps as `make setup`; what it copies exists; non-root; entrypoint."""
    text = (REPO_ROOT / "Dockerfile").read_text()
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in (REPO_ROOT / "requirements-dev.txt").read_text()
    assert "pip install --quiet --no-deps -r requirements-vocab.txt" in makefile
    assert re.search(r"pip install -r requirements\.txt\b", text)
    assert re.search(r"pip install --no-deps -r requirements-vocab\.txt\b", text)
    copied = re.findall(r"^COPY\s+(?!--from)(.+?)\s+\S+$", text, re.MULTILINE)
    sources = [s for line in copied for s in line.split()]
    for source in sources:
        assert (REPO_ROOT / source).exists(), source
    ignored = [line.strip().rstrip("/") for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()]
    for excluded in (".git", ".venv*", "runs", "models"):
        assert excluded in ignored
    assert not any(s.rstrip("/") in ignored for s in sources)
    entrypoint, workdir = _dockerfile()
    assert entrypoint == ["locust", "-f", "/app/locustfile.py"] and workdir == "/app"
    user = re.findall(r"^USER\s+(\d+)(?::(\d+))?\s*$", text, re.MULTILINE)
    assert user and int(user[-1][0]) >= 10000
    assert 'VOLUME ["/app/runs"]' in text
