"""The package: a wheel built from the tree installs into an empty venv, and what it installed runs
from a directory that holds nothing of the checkout (setup.py, pyproject.toml).

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/server/test_package.py.
"""

from __future__ import annotations

import subprocess

from tests.helpers import model_stats, read_summary, triton_options
from tests.unit.server import test_package as unit_package

installed = unit_package.installed  # a fixture of that module: pytest finds fixtures by name


def test_the_installed_suite_locustfile_runs_from_an_empty_directory(installed, triton):
    locustfile = installed.run(str(installed.venv / "bin" / "triton-loadtest"), "locustfile").stdout.strip()
    run_dir = installed.empty / "run"
    before = model_stats(triton.http_address, "identity")
    command = [installed.python, "-m", "locust", "-f", locustfile, "--headless", "--only-summary"]
    command += ["-u", "2", "-r", "20", "-t", "3s", "TritonHttpUser", *triton_options(triton)]
    result = installed.run(*command, "--model", "identity", "--run-dir", str(run_dir), timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    after = model_stats(triton.http_address, "identity")
    (endpoint,) = read_summary(run_dir)["endpoints"]
    assert endpoint["requests"] > 0 and endpoint["failures"] == 0
    assert endpoint["requests"] == after["requests"] - before["requests"]


USER_LOCUSTFILE = """
import numpy as np
from locust import task

from loadtests import TritonHttpUser


class Mine(TritonHttpUser):
    @task
    def ask(self):
        self.client.infer("identity", {"INPUT0": np.ones((1, 16), np.float32)}, name="mine")
"""


def test_a_users_locustfile_runs_with_the_installed_package_from_its_own_directory(installed, triton, tmp_path):
    work = tmp_path / "mine"
    work.mkdir()
    (work / "mine.py").write_text(USER_LOCUSTFILE)
    before = model_stats(triton.http_address, "identity")
    command = [installed.python, "-m", "locust", "-f", "mine.py", "--headless", "--only-summary"]
    command += ["-u", "2", "-r", "20", "-t", "3s", *triton_options(triton), "--run-dir", "run"]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    after = model_stats(triton.http_address, "identity")
    summary = read_summary(work / "run")
    (endpoint,) = summary["endpoints"]
    assert (endpoint["name"], endpoint["model"], endpoint["failures"]) == ("mine", "identity", 0)
    assert endpoint["requests"] == after["requests"] - before["requests"] > 0
    assert summary["server"]["identity"]["requests"] == endpoint["requests"]
