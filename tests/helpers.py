"""Small helpers the tests share: Triton statistics, subprocess runs of the suite's CLIs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tritonclient.http as httpclient

from loadtests.clients.outcome import RequestOutcome
from loadtests.config.addresses import TritonTarget
from tests import warm_python

REPO_ROOT = Path(__file__).resolve().parents[1]
# A test's own Triton (and the session's) is killed when the tests are done with it
# (LocalTriton(stop_timeout_s=...)): a graceful exit waits 3-6 s for Triton's one-second unload
# polls, and nothing after the test reads that Triton. stop() still kills the stubs and removes
# the shared-memory regions; the launcher's graceful stop is tested in tests/system/server/test_server.py.
THROWAWAY_STOP_S = 0.0
# The bundled tritonserver's Python backend can abort while many models' stubs start at once on a
# busy host (seen once: 26 models loading 16 at a time with the load average at 24, Triton killed
# by SIGABRT after "terminate called after throwing an instance of
# 'boost::interprocess::lock_exception'"). A fault of the server's startup, before any test ran:
# `start_triton` starts such a Triton once more; any other failure to start is the test's failure.
KNOWN_START_FAULT = "boost::interprocess::lock_exception"


def explicit_mode_triton(directory: Path, repositories: list[Path], models: list[str]):
    """A Triton of a test module's own in explicit model-control mode (`models` loaded from
    `repositories`, as `python -m loadtests serve --model-control explicit --load-model ...`
    starts it), its log in `directory`; a generator for a module fixture to `yield from`."""
    from loadtests.server import LocalTriton
    from loadtests.server.serve import model_control_args

    server = LocalTriton(
        repositories,
        log_file=directory / "triton.log",
        extra_args=model_control_args("explicit", models),
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    yield from serving(server)


def triton_of(directory: Path, *models: str):
    """A Triton of a test's own serving a few of the test models (`repository_of`), started,
    yielded and stopped (`serving`): for a test that freezes it, or would harm the session's."""
    from loadtests.server import LocalTriton

    repository = repository_of(directory / "models", *models)
    yield from serving(LocalTriton([repository], log_file=directory / "triton.log", stop_timeout_s=THROWAWAY_STOP_S))


def serving(server):
    """Start `server` (start_triton), yield it, stop it: the body of a fixture that owns a Triton."""
    start_triton(server)
    try:
        yield server
    finally:
        server.stop()


def start_triton(server) -> None:
    """server.start(), once more if it died of KNOWN_START_FAULT while loading its models."""
    from loadtests.errors import ServerError

    try:
        server.start()
    except ServerError:
        if KNOWN_START_FAULT not in server.log_text():
            raise
        print(f"Triton aborted while loading its models ({KNOWN_START_FAULT}, {server.log_file}): once more")
        server.start()


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


def model_stats_once_counted(http_address: str, model: str, requests: int, timeout_s: float = 3.0) -> dict[str, int]:
    """`model_stats` once Triton counts at least `requests` requests (or after `timeout_s`).

    A backend sends a request's response before it reports the request's statistics, so a
    client that reads them the moment its last response arrives can be one request ahead of
    Triton's count (seen: 46 counted of 47 answered).
    """
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        stats = model_stats(http_address, model)
        if stats["requests"] + stats["failures"] >= requests or time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


def repository_of(repository: Path, *names: str) -> Path:
    """A model repository of a few of models/test_repository's models: a Triton a test starts
    for its process handling starts in seconds, not with every test model's Python stub."""
    import shutil

    from loadtests.server import TEST_REPOSITORY

    for name in names:
        shutil.copytree(TEST_REPOSITORY / name, repository / name)
    return repository


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


def wait_until_running(run_dir: Path, after_s: float) -> None:
    """Until a Locust run into `run_dir` has started (timeseries.csv exists; a busy machine can
    take seconds to get there, at most 60), then `after_s` more."""
    import time

    deadline = time.monotonic() + 60
    while not (run_dir / "timeseries.csv").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(after_s)


def interrupt_locust(command: list[str], run_dir: Path, after_s: float = 2.0, while_running=None) -> None:
    """Start a Locust `command`, wait until its run has started (timeseries.csv exists; a busy
    machine can take seconds to get there) and `after_s` more, call `while_running()` if given,
    then Ctrl-C it and wait for it to end."""

    with subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=interruptible
    ) as process:
        wait_until_running(run_dir, after_s)
        if while_running is not None:
            while_running()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def run_master_and_workers(
    master_args: list[str], worker_args: list[str], port: int, workers: int = 2, timeout: float = 120
) -> subprocess.CompletedProcess:
    """A Locust master (`--master ... --headless` on 127.0.0.1:`port`, then `master_args`) and
    `workers` local worker processes (`worker_args`: their user classes); the master's exit code
    and output (stdout and stderr together) once every process has ended."""
    import time

    common = [sys.executable, "-m", "locust", "-f", "locustfile.py"]
    master_command = [*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
    master = subprocess.Popen(
        [*master_command, "--headless", *master_args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(1)
    worker_command = [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *worker_args]
    processes = [
        subprocess.Popen(worker_command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)
    ]
    try:
        output, _ = master.communicate(timeout=timeout)
        for worker in processes:
            worker.wait(timeout=60)
    finally:
        for process in [master, *processes]:
            if process.poll() is None:
                process.kill()
    return subprocess.CompletedProcess(master.args, master.returncode, output, "")


def run_cli(args: list[str], timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `python -m ...` from the repository root, as a user would, capturing output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    if warm_python.takes(args, env):
        return warm_python.run(args, full_env, timeout)
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def run_clis(commands: list[list[str]], timeout: float = 300) -> list[subprocess.CompletedProcess]:
    """run_cli over several commands, two at a time (most of each is Python starting up and
    importing, one core's work; this machine has two): the results in the commands' order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda args: run_cli(args, timeout=timeout), commands))


def run_locust(
    user_classes: list[str],
    options: list[str],
    users: int = 2,
    run_time: str | None = "4s",
    timeout: float = 180,
    env: dict[str, str] | None = None,
    locustfile: str = "locustfile.py",
) -> subprocess.CompletedProcess:
    """A headless Locust run of the project's locustfile, as a user would type it. run_time
    None: no -u/-r/-t (a --load-shape decides the users and the end); `locustfile`: Locust's
    -f, e.g. "locustfile.py,<a user's own file>"."""
    head = ["-m", "locust", "-f", locustfile, "--headless", "--only-summary"]
    if run_time is not None:
        head += ["-u", str(users), "-r", str(max(users, 1) * 10), "-t", run_time]
    return run_cli([*head, *user_classes, *options], timeout=timeout, env=env)


@dataclass(frozen=True)
class LocustRun:
    """A finished Locust run against a Triton: its process, run directory and Triton's counts
    (model_stats) of each watched model before and after it."""

    result: subprocess.CompletedProcess
    run_dir: Path
    before: dict[str, dict[str, int]]
    after: dict[str, dict[str, int]]

    @property
    def summary(self) -> dict | None:
        """summary.json, or None when the run wrote none (refused before any load)."""
        return read_summary(self.run_dir) if (self.run_dir / "summary.json").exists() else None

    def served(self, model: str | None = None, count: str = "requests") -> int:
        """What Triton counted for `model` (default: the one watched) during the run (a
        model_stats key)."""
        if model is None:
            (model,) = self.before
        return self.after[model][count] - self.before[model][count]


def run_against_triton(
    triton,
    run_dir: Path,
    user_classes: list[str],
    options: list[str],
    *,
    models: tuple[str, ...] = (),
    users: int = 2,
    run_time: str | None = "4s",
    expect_exit: int | None = 0,
    target: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 180,
    locustfile: str = "locustfile.py",
) -> LocustRun:
    """Run Locust against `triton` (the session's, or a test's own) into `run_dir`, reading
    Triton's statistics of `models` before and after. `target` replaces the options that point
    the run at `triton` (a proxy in front of it, say); expect_exit None: any exit code."""
    addresses = triton_options(triton) if target is None else target
    before = {model: model_stats(triton.http_address, model) for model in models}
    result = run_locust(
        user_classes,
        [*addresses, "--run-dir", str(run_dir), *options],
        users=users,
        run_time=run_time,
        timeout=timeout,
        env=env,
        locustfile=locustfile,
    )
    if expect_exit is not None:
        assert result.returncode == expect_exit, result.stdout[-2000:] + result.stderr[-3000:]
    after = {model: model_stats(triton.http_address, model) for model in models}
    return LocustRun(result, Path(run_dir), before, after)


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


def stalls(run_dir: Path) -> list[dict]:
    """The load generator's stalls that summary.json names (loadtests/recording/stalls.py)."""
    return read_summary(run_dir).get("faults", {}).get("load_generator_stalled", [])


def on_a_steady_load_generator(run: Callable[[Path], None], run_dir: Path) -> Path:
    """`run(run_dir)` for a test that reads the run's windows and steps to the second.

    When the host gives the load generator no CPU for a while (a busy CI machine), its steps
    start late and its windows go empty: the run names that stall in its faults, and the
    premise of such a test is gone. Such a run gets one more try; the run directory used is returned.
    """
    run(run_dir)
    if stalled := stalls(run_dir):
        print(f"the load generator stalled in {run_dir} ({stalled}): once more")
        run_dir = run_dir.with_name(run_dir.name + "-again")
        run(run_dir)
    return run_dir


def report_first_screen(markdown: str) -> list[str]:
    """What report.md says first, read from it: the bold outcome, the first bullet under the
    diagnosis heading, and the first numbered diagnosis with its "Next:" (or the no-limit line)."""
    lines = markdown.splitlines()
    screen = [next(line[2:-2] for line in lines if line.startswith("**") and line.endswith("**"))]
    section = lines[lines.index("## Diagnosis and next steps") + 1 :]
    section = section[: next((i for i, line in enumerate(section) if line.startswith("## ")), len(section))]
    screen += [line[2:] for line in section if line.startswith("- ")][:1]
    for i, line in enumerate(section):
        if line.startswith("1. **") and line.endswith("**"):
            step = next(s.strip() for s in section[i + 1 :] if s.strip().startswith("Next: "))
            return [*screen, f"{line[5:-2]}. {step}"]
    return [*screen, *[line for line in section if line.startswith("No rule found a limit")][:1]]
