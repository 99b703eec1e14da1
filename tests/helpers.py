"""Small helpers the tests share: Triton statistics, subprocess runs of the suite's CLIs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import tritonclient.http as httpclient

from loadtests.clients.outcome import RequestOutcome
from loadtests.config.addresses import TritonTarget

REPO_ROOT = Path(__file__).resolve().parents[1]


def http_target(address: str) -> TritonTarget:
    """--triton-http's value as Settings holds it (for tests that build clients or pollers)."""
    return TritonTarget.parse("--triton-http", address, "http")


def request_outcome(latency_us: float, *fields, **named) -> RequestOutcome:
    """One request of an endpoint "m [http]" of model m, for an EndpointStats: the latency, then
    RequestOutcome's other fields in order (batch_size, failure, uncorrected_us, ...) or by name."""
    return RequestOutcome("m [http]", "m", "http", latency_us, *fields, **named)


def grpc_target(address: str) -> TritonTarget:
    """--triton-grpc's value as Settings holds it."""
    return TritonTarget.parse("--triton-grpc", address, "grpc")


def model_stats(http_address: str, model: str) -> dict[str, int]:
    """Cumulative request (successful and failed)/execution/inference counts of one model from
    /v2/models/<m>/stats."""
    client = httpclient.InferenceServerClient(http_address)
    try:
        stats = client.get_inference_statistics(model)["model_stats"][0]
    finally:
        client.close()
    return {
        "requests": int(stats["inference_stats"]["success"]["count"]),
        "failures": int(stats["inference_stats"]["fail"]["count"]),
        "executions": int(stats["execution_count"]),
        "inferences": int(stats["inference_count"]),
    }


def triton_options(triton, server_stats_interval: float | None = None) -> list[str]:
    """The suite's options that point a run at the session's local Triton (all three endpoints)."""
    extra = ["--server-stats-interval", f"{server_stats_interval:g}"] if server_stats_interval is not None else []
    return [*triton.options, *extra]


def interruptible() -> None:
    """`preexec_fn` for a child the test interrupts: SIGINT as a terminal's Ctrl-C delivers it. A
    test runner started in the background of a non-interactive shell (as CI may be) inherits
    SIGINT ignored, its children too, and Python then never raises KeyboardInterrupt: the signal
    would test nothing (test_tune's Ctrl-C test ran its search to the end that way)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(args: list[str], timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `python -m ...` from the repository root, as a user would, capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def run_locust(
    user_classes: list[str], options: list[str], users: int = 2, run_time: str = "4s", timeout: float = 180
) -> subprocess.CompletedProcess:
    """A headless Locust run of the project's locustfile, as a user would type it."""
    args = [
        "-m",
        "locust",
        "-f",
        "locustfile.py",
        "--headless",
        "--only-summary",
        "-u",
        str(users),
        "-r",
        str(max(users, 1) * 10),
        "-t",
        run_time,
        *user_classes,
        *options,
    ]
    return run_cli(args, timeout=timeout)


def locust_request_counts(csv_prefix: Path) -> dict[tuple[str, str], int]:
    """Locust's own --csv table (`<prefix>_stats.csv`): Request Count per (Type, Name) row, the
    Aggregated row left out. The suite names each request (protocol, model), so a row is an endpoint."""
    import csv

    with open(f"{csv_prefix}_stats.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    return {(r["Type"], r["Name"]): int(r["Request Count"]) for r in rows if r["Name"] != "Aggregated"}


def read_summary(run_dir: Path) -> dict:
    import json

    return json.loads((Path(run_dir) / "summary.json").read_text())
