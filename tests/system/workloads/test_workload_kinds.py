"""The workload kinds' one table (loadtests/workloads/kinds.py) is the only place that knows them.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/workloads/test_workload_kinds.py.
"""

from __future__ import annotations

from tests.helpers import model_stats, read_summary, run_cli, triton_options

FAKE_LOCUSTFILE = '''
"""A kind that only this file knows: the generic kind's parts under another name."""
import dataclasses

from locust import events  # noqa: E402

from loadtests import run  # noqa: E402
from loadtests.workloads.kinds import GENERIC  # noqa: E402
from loadtests.workloads.users import TritonUser  # noqa: E402

ECHO = dataclasses.replace(GENERIC, name="echo", user_classes={"http": "EchoHttpUser", "grpc": "EchoGrpcUser"},
                           takes_mix=False)


class EchoHttpUser(TritonUser):
    kind = ECHO
    protocol = "http"


class EchoGrpcUser(TritonUser):
    kind = ECHO
    protocol = "grpc"


run.install(events)
'''


def test_a_kind_defined_outside_the_table_runs_end_to_end(triton, tmp_path):
    """A new kind needs its entry and its two user classes, nothing else: here both live in a
    locustfile of the test's own, and a run through pre-flight and the load counts what Triton counts."""
    locustfile = tmp_path / "echo_locustfile.py"
    locustfile.write_text(FAKE_LOCUSTFILE)
    run_dir = tmp_path / "run"
    before = model_stats(triton.http_address, "identity")
    result = run_cli(
        [
            "-m",
            "locust",
            "-f",
            str(locustfile),
            "--headless",
            "--only-summary",
            "-u",
            "2",
            "-r",
            "20",
            "-t",
            "3s",
            "EchoHttpUser",
            "EchoGrpcUser",
            *triton_options(triton),
            "--model",
            "identity",
            "--batch-size",
            "1,2",
            "--validate-responses",
            "--run-dir",
            str(run_dir),
        ],
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    after = model_stats(triton.http_address, "identity")
    endpoints = read_summary(run_dir)["endpoints"]
    assert sorted((e["model"], e["protocol"]) for e in endpoints) == [("identity", "grpc"), ("identity", "http")]
    assert all(e["failures"] == 0 and e["requests"] > 0 for e in endpoints)
    assert sum(e["requests"] for e in endpoints) == after["requests"] - before["requests"]
