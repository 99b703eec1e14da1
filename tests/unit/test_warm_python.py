"""tests/warm_python.py: a command run by a fork of the warm server gives what a new interpreter
gives (exit code, stdout, stderr), reads its own environment, times out as subprocess.run does, and
draws its own random numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests import warm_python
from tests.helpers import REPO_ROOT

STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]", re.MULTILINE)  # Locust's log lines
REFUSAL = ["-m", "locust", "-f", "locustfile.py", "--headless", "-u", "1", "-t", "1s", "TritonHttpUser"]


def cold(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    command = [sys.executable, *args]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=full, timeout=120)


def warm(args: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return warm_python.run(args, {**os.environ, **(env or {})}, timeout)


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "locust", "--version"],
        [*REFUSAL, "--model", "identity", "--triton-url", "http://127.0.0.1:1"],  # Locust's parser refuses
        [*REFUSAL, "--model", "identity", "--batch-size", "0"],  # the suite's init listener refuses
        ["-m", "locust", "-f", "no_such_locustfile.py"],
    ],
    ids=["version", "locust-parser", "suite-listener", "missing-locustfile"],
)
def test_a_warm_command_prints_and_exits_as_a_new_interpreter_does(args):
    assert warm_python.takes(args, None)
    warmed, new = warm(args), cold(args)
    assert (warmed.returncode, warmed.stdout) == (new.returncode, new.stdout)
    assert STAMP.sub("[time]", warmed.stderr) == STAMP.sub("[time]", new.stderr)
    assert warmed.args == new.args


def test_a_locustfile_without_the_suite_gets_plain_locust(tmp_path):
    """The server imports the suite's modules but does not install it on Locust's events: a
    command whose locustfile does not import the suite has Locust's options only, as it would
    cold (its --help lists none of the suite's)."""
    plain = tmp_path / "plain.py"
    plain.write_text(
        "from locust import HttpUser, task\n\n\nclass Web(HttpUser):\n    @task\n    def home(self):\n        pass\n"
    )
    args = ["-m", "locust", "-f", str(plain), "--help"]
    warmed, new = warm(args), cold(args)
    assert "--triton-http" not in new.stdout and "--run-time" in new.stdout, new.stdout[-500:]
    assert (warmed.returncode, warmed.stdout) == (new.returncode, new.stdout)


def test_the_command_reads_its_own_environment():
    """Locust reads LOCUST_* variables when it parses its arguments, in the child: a bad value
    set for one command is that command's error, and the next command without it runs clean."""
    args = ["-m", "locust", "-f", "locustfile.py", "--headless", "TritonHttpUser", "--model", "identity"]
    env = {"LOCUST_USERS": "not-a-number"}
    warmed, new = warm(args, env), cold(args, env)
    assert warmed.returncode == new.returncode == 2
    assert STAMP.sub("[time]", warmed.stderr) == STAMP.sub("[time]", new.stderr)
    assert "LOCUST_USERS" not in os.environ
    assert warm(["-m", "locust", "--version"]).returncode == 0


def test_a_command_past_its_timeout_is_killed_and_raises_as_subprocess_run_does(tmp_path):
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    args = ["-m", "locust", "-f", str(sleeper), "--headless"]
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        warm(args, timeout=1.0)
    assert raised.value.timeout == 1.0 and raised.value.cmd == [sys.executable, *args]
    assert warm(["-m", "locust", "--version"]).returncode == 0  # the server goes on


def test_each_command_draws_its_own_random_numbers(tmp_path):
    """A fork inherits its parent's random state; each child draws again, as a new process would."""
    drawer = tmp_path / "drawer.py"
    drawer.write_text("import random, sys\nimport numpy\nprint(random.random(), numpy.random.random())\nsys.exit(0)\n")
    draws = [warm(["-m", "locust", "-f", str(drawer)]).stdout for _ in range(3)]
    assert all(draws) and len(set(draws)) == 3, draws
    assert len({draw.split()[1] for draw in draws}) == 3, draws  # numpy's too


def test_commands_that_change_how_python_starts_run_cold():
    assert not warm_python.takes(["-m", "locust"], {"PYTHONWARNINGS": "error"})
    assert not warm_python.takes(["-m", "analysis", "report"], None)
    assert not warm_python.takes(["-c", "pass"], None)
