"""docs/guides/your-locustfile.md: every locustfile it shows (a ```python block whose first line names
the file) and every `locust -f` command that runs them, run against the session's Triton from a
directory that holds only those files: exit 0, requests sent, and per model the client's count is
Triton's.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/workloads/test_guide_locustfiles.py.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT, read_summary
from tests.unit.workloads.test_guide_locustfiles import guide_commands, guide_files

SUITE = "$(triton-loadtest locustfile)"  # the installed suite's locustfile: the checkout's here
ADDRESSES = ("--triton-http", "--triton-grpc", "--triton-metrics")


def runnable(command: str, triton, run_dir: Path) -> list[str]:
    """The guide's command, short and pointed at the session's Triton."""
    argv = shlex.split(command.replace(SUITE, str(REPO_ROOT / "locustfile.py")))
    out, skip = [], False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word in ("-t", *ADDRESSES):
            skip = True
        else:
            out.append(word)
    return [
        sys.executable,
        "-m",
        "locust",
        *out,
        "-t",
        "2s",
        *triton.options,
        "--run-dir",
        str(run_dir),
        "--only-summary",
    ]


def test_every_guide_locustfile_runs_and_reconciles(triton, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name, code in guide_files().items():
        # The guide's Metrics user scrapes Triton's metrics at localhost:8002: the session's port here.
        (work / name).write_text(code.replace("localhost:8002", triton.metrics_address))
    shutil.copy(REPO_ROOT / "locustfile.py", work / "locustfile.py")
    problems = []
    for number, command in enumerate(guide_commands()):
        run_dir = tmp_path / f"run{number}"
        result = subprocess.run(
            runnable(command, triton, run_dir), cwd=work, capture_output=True, text=True, timeout=180
        )
        if result.returncode != 0 or not (run_dir / "summary.json").exists():
            problems.append(f"{command}: exit {result.returncode}\n{result.stderr[-1500:]}")
            continue
        summary = read_summary(run_dir)
        client: dict[str, int] = {}
        for endpoint in summary["endpoints"]:
            assert endpoint["failures"] == 0, (command, endpoint)
            if endpoint["model"]:
                client[endpoint["model"]] = client.get(endpoint["model"], 0) + endpoint["requests"]
        server = {model: entry["requests"] + entry["failed_requests"] for model, entry in summary["server"].items()}
        if not client or any(count == 0 for count in client.values()) or client != server:
            problems.append(f"{command}: client {client}, Triton {server}")
    assert not problems, "\n".join(problems)
