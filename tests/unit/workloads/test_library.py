"""The suite as a Locust library: a user's own locustfile imports the bases from `loadtests`,
writes tasks that send through `self.client.infer`, and gets Locust's semantics (its tasks
only, wait_time, TaskSets, tags) with every request counted as Triton counts it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.helpers import REPO_ROOT

HEADER = """
import numpy as np
from locust import SequentialTaskSet, TaskSet, constant, tag, task

from loadtests import TritonGrpcUser, TritonHttpUser

ONES = {"INPUT0": np.ones((1, 16), np.float32)}
"""

# Two models, think time, weights: the classes need no --model.
JOURNEY = """
class Journey(TritonHttpUser):
    wait_time = constant(0.05)

    @task(3)
    def identity(self):
        answer = self.client.infer("identity", ONES)
        assert answer.ok and (answer.as_numpy("OUTPUT0") == 1).all()

    @task
    def sleep(self):
        self.client.infer("sleep_10ms_single", {"INPUT0": np.zeros((2, 4), np.float32)}, name="nap")
"""


def write(tmp_path, body: str, name: str = "mine.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(HEADER) + textwrap.dedent(body))
    return str(path)


def test_importing_a_base_adds_no_class_and_two_locustfiles_set_the_suite_up_once(tmp_path):
    """Locust runs every non-abstract User class a locustfile holds, imported ones included: the
    bases are abstract, the suite's concrete classes stay in its locustfile. Before: `from
    loadtests import TritonHttpUser` was an ImportError, and two files that both called
    run.install(events) an argparse traceback ('conflicting option string')."""
    mine = write(tmp_path, JOURNEY + "\nfrom locust import events\nfrom loadtests import run\nrun.install(events)\n")

    def listed(locustfile: str) -> list[str]:
        command = [sys.executable, "-m", "locust", "-f", locustfile, "--list"]
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        return sorted(line.strip() for line in result.stdout.splitlines()[1:] if line.strip())

    builtin = sorted(["BertQAGrpcUser", "BertQAHttpUser", "ResNetGrpcUser", "ResNetHttpUser", "TritonGrpcUser"])
    builtin = sorted([*builtin, "TritonHttpUser", "TritonSequenceGrpcUser", "TritonSequenceHttpUser"])
    assert listed(mine) == ["Journey"]
    assert listed("locustfile.py") == builtin
    assert listed(f"locustfile.py,{mine}") == sorted([*builtin, "Journey"])
