"""The package: a wheel built from the tree installs into an empty venv, and what it installed
runs from a directory that holds nothing of the checkout (setup.py, pyproject.toml).

The venv gets the wheel without its dependencies and sees the test venv's packages through a
.pth file: the pins are the same file (requirements.txt, checked against the wheel's metadata),
and the test stays a matter of seconds instead of a download of every dependency.
"""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

# What the build reads: the rest of the checkout (tests, models, docs, k8s, ...) stays out of it.
BUILD_INPUTS = ("setup.py", "pyproject.toml", "requirements.txt", "loadtests", "analysis", "payloads")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    empty: Path  # a working directory with nothing in it

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(args), cwd=self.empty, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )


def build_wheel(source: Path, out: Path) -> Path:
    """`pip wheel .` on a copy of what the build reads (the checkout gets no build/ folder)."""
    source.mkdir(parents=True)
    for name in BUILD_INPUTS:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO_ROOT / name, source / name)
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = out.glob("triton_loadtest-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("package")
    wheel = build_wheel(root / "source", root / "dist")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # The dependencies: the test venv's (the same pins). Its own .pth files, the one that puts
    # the checkout on sys.path among them, are not read from a directory a .pth line adds.
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "test-venv-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    empty = root / "empty"
    empty.mkdir()
    return Installed(wheel, venv, empty)


def test_the_wheel_declares_requirements_txt_pins_with_the_server_parts_as_an_extra(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_string(wheel.read(name).decode())
        files = set(wheel.namelist())
    requires = metadata.get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    server = [r.split(";")[0].strip() for r in requires if 'extra == "server"' in r]
    assert server == ["nvidia-pytriton==0.7.0", "onnx==1.23.2", "onnxruntime==1.31.1"]
    pinned = [line.split("#")[0].strip() for line in (REPO_ROOT / "requirements.txt").read_text().splitlines()]
    pinned = [line.replace("[http,grpc]", "[grpc,http]") for line in pinned if line]
    assert sorted(core + server) == sorted(pinned)
    # The packages, the suite's locustfile and the payloads the workloads read by default.
    assert {"loadtests/__init__.py", "loadtests/locustfile.py", "analysis/__main__.py"} <= files
    assert {"loadtests/payloads/qa/squad_style.jsonl", "loadtests/payloads/images/grace_hopper.jpg"} <= files
    assert not any(n.startswith(("tests/", "models/", "bench/", "k8s/", "docs/")) for n in files)


def test_the_console_command_and_the_api_work_from_an_empty_directory(installed):
    bin_dir = installed.venv / "bin"
    help_text = installed.run(str(bin_dir / "triton-loadtest"), "--help")
    assert help_text.returncode == 0, help_text.stderr
    assert help_text.stdout.startswith("usage: triton-loadtest")
    for command in ("serve", "demo", "sweep", "capacity", "tune", "options", "locustfile"):
        assert command in help_text.stdout
    located = installed.run(str(bin_dir / "triton-loadtest"), "locustfile")
    assert located.returncode == 0, located.stderr
    locustfile = Path(located.stdout.strip())
    assert locustfile.is_file() and installed.venv in locustfile.parents
    probe = (
        "from loadtests import TritonHttpUser, TritonGrpcUser, BertQAHttpUser, TaskClient;"
        "assert TritonHttpUser.abstract and not TritonHttpUser.tasks;"
        "import loadtests, analysis, loadtests.workloads.bert_qa as qa, loadtests.workloads.images as images;"
        "print(loadtests.__file__); print(analysis.__file__); print(qa.DEFAULT_PAYLOAD.is_file());"
        "print(images.DEFAULT_IMAGE_DIR.is_dir())"
    )
    imported = installed.run(installed.python, "-c", probe)
    assert imported.returncode == 0, imported.stderr
    package, analysis, payload, images = imported.stdout.split()
    assert installed.venv in Path(package).parents and installed.venv in Path(analysis).parents
    assert payload == images == "True"


def test_serve_without_the_checkouts_demo_models_says_what_to_do(installed):
    """Before: a ModuleNotFoundError traceback ('No module named models'): the demo models and
    their build scripts are the checkout's, not the package's."""
    result = installed.run(str(installed.venv / "bin" / "triton-loadtest"), "serve", "--http-port", "1")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "--model-repository DIR" in line
