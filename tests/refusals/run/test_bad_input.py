"""The bad-input table: every kind of bad setup stops with one `error:` line and exit code 2.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/run/test_bad_input.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loadtests.server import TritonPorts
from tests.helpers import REPO_ROOT, model_stats
from tests.unit.run.test_bad_input import CLI_CASES, CliCase, assert_one_error

pytestmark = pytest.mark.badinput
# Generous for a 1-s run on a busy 2-core machine; a case that hangs is killed at this point.
SUBPROCESS_TIMEOUT_S = 60
# Each case is mostly a Python process starting (one core's work): two at a time on this 2-core
# machine. Four lanes only doubled each case's time (the longest lane, one model's cases one after
# another, stayed the critical path): the 64 cases took 30-37 s in 3 or 4 lanes, 27-33 s in 2.
LANES = 2


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("badfiles")
    (root / "file").write_text("a file, not a directory\n")
    (root / "emptydir").mkdir()
    (root / "not.json").write_bytes(b"\x00\x01{ not json")
    (root / "short.json").write_text(json.dumps({"data": [{"INPUT0": [0.0] * 5}]}))
    (root / "textdir").mkdir()
    (root / "textdir" / "notes.txt").write_text("no images here\n")
    (root / "corruptimages").mkdir()
    (root / "corruptimages" / "broken.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    (root / "empty_mix.yaml").write_text("models: {}\n")
    (root / "typo_mix.json").write_text(json.dumps({"models": {"identity": {"weight": 1, "batchsize": 4}}}))
    # identity's INPUT0 is [16]: a mix model's own --shape that does not fit it
    (root / "misfit_mix.yaml").write_text("models:\n  identity: {weight: 1, shape: 'INPUT0:5'}\n")
    return root


@dataclass
class CliOutcome:
    result: subprocess.CompletedProcess
    before: dict | None = None
    after: dict | None = None
    values: dict[str, str] = field(default_factory=dict)


def _command(case: CliCase, values: dict[str, str], triton_options: list[str]) -> list[str]:
    argv = [arg.format(**values) for arg in case.argv]
    if case.program == "locust":
        head = ["-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary", "-u", "1", "-r", "10"]
        return [*head, "-t", "1s", *case.user_class.split(), *triton_options, *argv]
    if case.program == "serve":
        defaults = ["--http-port", values["free_http"], "--grpc-port", values["free_grpc"]]
        return ["-m", "loadtests", "serve", *defaults, "--metrics-port", values["free_metrics"], *argv]
    return ["-m", "analysis", *argv]


def _run(command: list[str]) -> subprocess.CompletedProcess:
    """The command's outcome; one that hangs (e.g. a server that started after all) is killed and
    recorded with returncode None, so it fails its own case only."""
    try:
        return subprocess.run(
            [sys.executable, *command],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT_S,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else ""
        return subprocess.CompletedProcess(command, None, "", f"{stderr}\n(timed out after {expired.timeout} s)")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def finished_run(triton, tmp_path_factory) -> Path:
    """A real, finished run directory (identity model, 1 s) for the analysis cases."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    command = [
        "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary", "-u", "1", "-r", "10", "-t", "1s",
        "TritonHttpUser", "--model", "identity", *triton.options, "--run-dir", str(run_dir),
    ]  # fmt: skip
    result = _run(command)
    assert result.returncode == 0 and (run_dir / "summary.json").is_file(), result.stderr[-2000:]
    return run_dir


@pytest.fixture(scope="module")
def cli_outcomes(triton, cli_files, finished_run) -> dict[str, CliOutcome]:
    """Every CLI case, run once: lanes in parallel, one lane per model (so counts are per case)."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    held = contextlib.ExitStack()  # the closed ports stay bound until every case has run
    closed = held.enter_context(TritonPorts.held())
    values = {
        "http": triton.http_address,
        "grpc": triton.grpc_address,
        "tmp": str(cli_files),
        "run": str(finished_run),
        "busy": str(busy.getsockname()[1]),
        "closed_http": str(closed.http),
        "closed_grpc": str(closed.grpc),
    }
    lanes: dict[str, list[CliCase]] = {}
    for index, case in enumerate(CLI_CASES):
        # Cases on one model share a lane (run one after another); the rest are spread out.
        key = case.model or f"none-{index % LANES}"
        lanes.setdefault(key, []).append(case)

    def run_lane(cases: list[CliCase]) -> dict[str, CliOutcome]:
        out = {}
        for case in cases:
            free = TritonPorts.free()  # serve cases run in parallel: each on ports of its own
            case_values = {**values, "free": str(free.http), "free_http": str(free.http)}
            case_values |= {"free_grpc": str(free.grpc), "free_metrics": str(free.metrics)}
            command = _command(case, case_values, list(triton.options))
            before = model_stats(triton.http_address, case.model) if case.model else None
            result = _run(command)
            after = model_stats(triton.http_address, case.model) if case.model else None
            out[case.id] = CliOutcome(result, before, after, case_values)
        return out

    try:
        with ThreadPoolExecutor(max_workers=LANES) as pool:
            outcomes: dict[str, CliOutcome] = {}
            for lane in pool.map(run_lane, lanes.values()):
                outcomes.update(lane)
    finally:
        busy.close()
        held.close()
    return outcomes


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.id for case in CLI_CASES])
def test_cli_refuses_bad_input_before_any_load(case, cli_outcomes):
    outcome = cli_outcomes[case.id]
    fragment = case.fragment.format(**outcome.values)
    result = outcome.result
    assert_one_error(result.returncode, result.stderr, fragment)
    if case.model is not None:
        assert outcome.after == outcome.before, f"{case.model} counted requests: {outcome.before} -> {outcome.after}"
    if case.program == "locust":
        assert "Run directory:" not in result.stdout  # nothing was started, nothing was written
