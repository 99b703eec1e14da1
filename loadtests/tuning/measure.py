"""One variant measured through the suite's own command line, as a user would run it.

    target = Target(model="m", slo="p99<50ms", triton=["--triton-http", "h:8000", ...], forwarded=[...])
    code = run_command(capacity_command(target, run_dir, search=["--start-rate", "20"]))
    code = run_command(rate_command(target, run_dir, rate=50.0))

`python -m loadtests capacity` searches the variant's capacity under the SLO (its capacity.json
and run directory are read afterwards); with --rate, `python -m loadtests sweep --request-rate
RATE` holds that one open-loop rate until stable (p99 and the server's breakdown come from its
summary.json). Options tune does not know (--shape, --batch-size, --measurement-interval, ...)
go to both unchanged.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from loadtests.server.launcher import REPO_ROOT


@dataclass(frozen=True)
class Target:
    """What every measurement of one tune shares."""

    model: str
    slo: str
    triton: list[str]  # --triton-http/--triton-grpc/--triton-metrics HOST:PORT
    forwarded: list[str] = field(default_factory=list)


def capacity_command(target: Target, run_dir: Path, search: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "loadtests",
        "capacity",
        "--model",
        target.model,
        "--slo",
        target.slo,
        *target.triton,
        "--run-dir",
        str(run_dir),
        *search,
        *target.forwarded,
    ]


def rate_command(target: Target, run_dir: Path, rate: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "loadtests",
        "sweep",
        "--request-rate",
        f"{rate:g}",
        "--model",
        target.model,
        *target.triton,
        "--run-dir",
        str(run_dir),
        *target.forwarded,
    ]


def run_command(command: list[str]) -> int:
    """Run one measurement in the foreground; its exit code.

    Ctrl-C reaches the child from the terminal (same process group): it stops its users and
    writes its run directory, and KeyboardInterrupt goes on up once it has. A SIGTERM to tune
    is passed on to the child as SIGINT, then raised here as KeyboardInterrupt.
    """
    process = subprocess.Popen(command, cwd=REPO_ROOT)

    def on_sigterm(_signum: int, _frame: FrameType | None) -> None:
        process.send_signal(signal.SIGINT)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.wait()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
