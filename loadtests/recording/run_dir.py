"""The run directory: the one contract between measuring and reporting (DESIGN.md).

    runs/20261122T013000Z-bertqagrpcuser/
        config.json    every option, versions, user classes, start time
        summary.json   per endpoint: requests, failures, inferences, throughput, exact latency_us

Written by the master (or the standalone process) only.
"""

from __future__ import annotations

import json
import platform
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from locust.env import Environment

from loadtests import __version__
from loadtests.options import Settings
from loadtests.recording.histograms import Recorder

RUNS_ROOT = Path("runs")
VERSIONED_PACKAGES = ("locust", "tritonclient", "numpy", "gevent", "grpcio")


def default_run_dir(environment: Environment, now: datetime | None = None) -> Path:
    """runs/<UTC timestamp>-<user classes>, e.g. runs/20261122T013000Z-bertqagrpcuser."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    names = "-".join(sorted(cls.__name__.lower() for cls in environment.user_classes)) or "run"
    short = re.sub(r"[^a-z0-9-]+", "", names)[:48]
    return RUNS_ROOT / f"{stamp}-{short}"


def versions() -> dict[str, str]:
    found = {"triton-loadtest": __version__, "python": platform.python_version()}
    for package in VERSIONED_PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def _jsonable(options) -> dict:
    out = {}
    for key, value in sorted(vars(options).items()) if options is not None else []:
        if isinstance(value, str | int | float | bool) or value is None:
            out[key] = value
        elif isinstance(value, list | tuple):
            out[key] = [v if isinstance(v, str | int | float | bool) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out


@dataclass
class RunDirectory:
    path: Path
    started_at: float

    @classmethod
    def create(cls, environment: Environment, settings: Settings) -> RunDirectory:
        path = Path(settings.run_dir) if settings.run_dir else default_run_dir(environment)
        path.mkdir(parents=True, exist_ok=True)
        run = cls(path=path, started_at=time.time())
        config = {
            "started_at": datetime.fromtimestamp(run.started_at, UTC).isoformat(),
            "user_classes": sorted(c.__name__ for c in environment.user_classes),
            "options": _jsonable(environment.parsed_options),
            "versions": versions(),
        }
        (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        return run

    def write(self, recorder: Recorder, load_generator_cpu_s: float) -> Path:
        duration = max(time.time() - self.started_at, 1e-9)
        endpoints = []
        for stats in sorted(recorder.endpoints.values(), key=lambda s: s.name):
            endpoints.append(
                {
                    "name": stats.name,
                    "model": stats.model,
                    "protocol": stats.protocol,
                    "requests": stats.requests,
                    "failures": stats.failure_count,
                    "failures_by_class": dict(sorted(stats.failures.items())),
                    "inferences": stats.inferences,
                    "duration_s": round(duration, 3),
                    "throughput_rps": round(stats.requests / duration, 3),
                    "throughput_infer_per_s": round(stats.inferences / duration, 3),
                    "latency_us": stats.latency_summary_us(),
                }
            )
        requests = sum(stats.requests for stats in recorder.endpoints.values())
        load_generator = {
            "cpu_s": round(load_generator_cpu_s, 3),
            "cpu_per_request_us": round(load_generator_cpu_s * 1e6 / requests, 1) if requests else None,
        }
        summary = {"endpoints": endpoints, "server": {}, "load_generator": load_generator}
        (self.path / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return self.path
