"""Start, wait for, and stop a local tritonserver.

    with LocalTriton([DEMO_REPOSITORY]) as triton:
        print(triton.http_url)   # e.g. http://127.0.0.1:41235

Ports default to free ones (tests, `make demo`); `python -m loadtests serve`
passes 8000/8001/8002. Triton and every Python stub it starts run in their own
process group, so stopping the group leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadtests.clients.control import DEFAULT_TIMEOUT_S as DEFAULT_CONTROL_TIMEOUT_S
from loadtests.clients.control import TritonControl, metrics_url
from loadtests.errors import ServerError
from loadtests.run_format.output_paths import file_problem
from loadtests.server.install import TritonInstallation

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The suite's own locustfile, inside the package (the checkout's top-level locustfile.py imports it).
SUITE_LOCUSTFILE = PACKAGE_ROOT / "locustfile.py"
# A checkout: the package beside models/ (and runs/). A pip install (site-packages) has neither,
# so the commands run Locust and write their runs/ in the working directory instead.
CHECKOUT = PACKAGE_ROOT.parent
REPO_ROOT = CHECKOUT if (CHECKOUT / "models" / "build.py").is_file() else Path.cwd()
DEMO_REPOSITORY = REPO_ROOT / "models" / "repository"
TEST_REPOSITORY = REPO_ROOT / "models" / "test_repository"


def triton_options(http: str, grpc: str, metrics: str) -> list[str]:
    """The suite's options that point a Locust run at one Triton (all three endpoints: a run
    without --triton-metrics would scrape 127.0.0.1:8002, possibly someone else's server)."""
    return ["--triton-http", http, "--triton-grpc", grpc, "--triton-metrics", metrics]


def locust_command(*args: str) -> list[str]:
    """`python -m locust -f <package>/locustfile.py --headless --only-summary ARGS`: how the suite's
    own commands (demo, sweep, bench) run a load test, as a user would type it."""
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(SUITE_LOCUSTFILE),
        "--headless",
        "--only-summary",
        *args,
    ]


DEFAULT_HOST = "127.0.0.1"
DEFAULT_STARTUP_TIMEOUT_S = 180.0
DEFAULT_STOP_TIMEOUT_S = 30.0
KILLED_EXIT_TIMEOUT_S = 10.0  # after SIGKILL: only the kernel's cleanup is left
READY_POLL_INTERVAL_S = 0.2
# Each readiness poll waits this long for an answer: a server still starting may not answer yet.
READY_POLL_TIMEOUT_S = 1.0
LOG_LINES_ON_FAILURE = 12
EXIT_TIMEOUT_S = 5
PR_SET_PDEATHSIG = 1  # linux/prctl.h

# Triton's own log lines start with a severity letter and a date: "E1122 01:21:07.80 ...".
_ERROR_LINE = re.compile(r"^E\d{4} |failed to load|UNAVAILABLE|error:|Error", re.IGNORECASE)

MAX_PORT = 65535


@dataclass(frozen=True)
class TritonPorts:
    """HTTP, gRPC and metrics ports. Example: TritonPorts(8000, 8001, 8002)."""

    http: int
    grpc: int
    metrics: int

    @classmethod
    def free(cls, host: str = DEFAULT_HOST) -> TritonPorts:
        """Three ports free now, all different: the three sockets stay bound until all are
        picked (one bound and closed at a time, the kernel handed the same port out twice)."""
        with cls.held(host) as ports:
            return ports

    @classmethod
    @contextlib.contextmanager
    def held(cls, host: str = DEFAULT_HOST) -> Iterator[TritonPorts]:
        """Three different ports, bound and never listening until the block ends: nothing else
        can take them, and a connection to any of them is refused (a port only free a moment
        before may have been taken by then)."""
        with contextlib.ExitStack() as stack:
            socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(3)]
            for sock in socks:
                sock.bind((host, 0))
            yield cls(*(sock.getsockname()[1] for sock in socks))

    def check(self) -> None:
        """Three distinct port numbers; raises ServerError. Without this, tritonserver answers a
        repeated or out-of-range port with pages of its usage text and no reason."""
        flags = {"--http-port": self.http, "--grpc-port": self.grpc, "--metrics-port": self.metrics}
        for flag, port in flags.items():
            if not 1 <= port <= MAX_PORT:
                raise ServerError(f"{flag} {port} is not a port number (1 to {MAX_PORT})")
        for (flag, port), (other, other_port) in itertools.combinations(flags.items(), 2):
            if port == other_port:
                raise ServerError(f"{flag} and {other} are both {port}: Triton needs three different ports")


def _check_port_free(host: str, port: int, flag: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As Triton binds: connections of a server that just stopped linger in TIME_WAIT
        # and would fail a plain bind, while only a listening socket makes Triton fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            raise ServerError(f"port {port} is already in use on {host} (choose another with {flag})") from None


_MODEL_LOAD_FAILURE = re.compile(r"failed to load '([^']+)' version \d+: (.*?)(?:\\n|\"$)")


def explain_failure(log_text: str, limit: int = LOG_LINES_ON_FAILURE) -> str:
    """What a Triton log says about a failed start, as one line.

    Model load failures are distilled to "model 'm' failed to load: reason" (the
    Python traceback that follows the reason in the log is dropped); anything else
    falls back to the log's error lines.
    """
    failures = dict(_MODEL_LOAD_FAILURE.findall(log_text))
    if failures:
        return "; ".join(f"model '{model}' failed to load: {reason.strip()}" for model, reason in failures.items())
    lines = [line.strip() for line in log_text.splitlines() if _ERROR_LINE.search(line)]
    # CUDA/NVML/DCGM complaints are expected on a CPU-only machine and explain nothing.
    noise = ("CudaDriverHelper", "NVML", "DCGM", "pinned memory", "CUDA driver")
    lines = [line for line in lines if not any(n in line for n in noise)]
    return " | ".join(lines[-limit:])


SHM_DIR = "/dev/shm"
AUTOGROUP = "/proc/self/autogroup"  # the scheduler group of the calling process's session (Linux)


class LocalTriton:
    """A tritonserver process on loopback, serving one or more model repositories.

    Example:
        with LocalTriton([DEMO_REPOSITORY], ports=TritonPorts(8000, 8001, 8002)) as t:
            t.http_url
    """

    def __init__(
        self,
        model_repositories: Sequence[Path],
        ports: TritonPorts | None = None,
        host: str = DEFAULT_HOST,
        log_file: Path | None = None,
        environment: dict[str, str] | None = None,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        installation: TritonInstallation | None = None,
        extra_args: Sequence[str] = (),
        stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
    ) -> None:
        self.model_repositories = [Path(r).resolve() for r in model_repositories]
        self.host = host
        self.ports = ports or TritonPorts.free(host)
        self.startup_timeout_s = startup_timeout_s
        self.extra_environment = dict(environment or {})
        self.extra_args = list(extra_args)
        # How long stop() (and leaving a `with` block) lets Triton exit gracefully before SIGKILL.
        self.stop_timeout_s = stop_timeout_s
        self._installation = installation
        # Kept after a failed start, so the log named in the error message is still there.
        self._workdir = Path(tempfile.mkdtemp(prefix="triton-loadtest-"))
        self._ready = False
        self.log_file = Path(log_file) if log_file else self._workdir / "triton.log"
        # Triton's trace file can only be set at startup: every local Triton has one, tracing
        # OFF until a run asks for it (--trace-sample, loadtests/tracing/switch.py).
        self.trace_file = self._workdir / "traces" / "trace.json"
        self.process: subprocess.Popen | None = None
        # (PID, start time) of every process seen in Triton's tree: a PID alone is not an
        # identity, the kernel reuses it once the process has exited (pid_max is 32768).
        self._started_pids: set[tuple[int, float]] = set()
        # The Python backend's shared-memory regions (/dev/shm) carry this prefix: a Triton that
        # was killed (SIGKILL, OOM) leaves its 1-MB regions behind, and stop() removes them.
        self.shm_prefix = f"triton_loadtest_{uuid.uuid4().hex[:12]}_"

    # -- URLs -------------------------------------------------------------------------
    @property
    def http_address(self) -> str:
        return f"{self.host}:{self.ports.http}"

    @property
    def grpc_address(self) -> str:
        return f"{self.host}:{self.ports.grpc}"

    @property
    def metrics_address(self) -> str:
        return f"{self.host}:{self.ports.metrics}"

    @property
    def options(self) -> list[str]:
        """--triton-http/--triton-grpc/--triton-metrics for this server."""
        return triton_options(self.http_address, self.grpc_address, self.metrics_address)

    @property
    def http_url(self) -> str:
        return f"http://{self.http_address}"

    @property
    def grpc_url(self) -> str:
        return f"grpc://{self.grpc_address}"

    @property
    def metrics_url(self) -> str:
        return metrics_url(self.metrics_address)

    # -- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> LocalTriton:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def command(self, backend_directory: Path) -> list[str]:
        installation = self.installation
        args = [
            str(installation.tritonserver),
            f"--backend-directory={backend_directory}",
            f"--http-address={self.host}",
            f"--grpc-address={self.host}",
            f"--http-port={self.ports.http}",
            f"--grpc-port={self.ports.grpc}",
            f"--metrics-port={self.ports.metrics}",
            "--allow-metrics=true",
            "--log-verbose=0",
            # An idle client connection left open must not hold shutdown for the default 30 s.
            f"--exit-timeout-secs={EXIT_TIMEOUT_S}",
            f"--backend-config=python,shm-region-prefix-name={self.shm_prefix}",
            f"--trace-config=triton,file={self.trace_file}",
            "--trace-config=level=OFF",
        ]
        args += [f"--model-repository={repo}" for repo in self.model_repositories]
        return args + self.extra_args

    @property
    def installation(self) -> TritonInstallation:
        if self._installation is None:
            self._installation = TritonInstallation.locate()
        return self._installation

    def start(self) -> None:
        """Check the setup, launch tritonserver, and wait until every model is ready."""
        for repo in self.model_repositories:
            if not repo.is_dir():
                raise ServerError(f"model repository {repo} does not exist")
        self.ports.check()
        problem = file_problem(self.log_file)
        if problem:
            raise ServerError(f"log file {self.log_file}: {problem} (choose another with --log-file)")
        for port, flag in (
            (self.ports.http, "--http-port"),
            (self.ports.grpc, "--grpc-port"),
            (self.ports.metrics, "--metrics-port"),
        ):
            _check_port_free(self.host, port, flag)
        installation = self.installation
        backend_directory = installation.make_backend_directory(self._workdir / "backends")
        env = installation.environment()
        env.update(self.extra_environment)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.trace_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "wb") as log:
            # A new session: Triton and the stubs it forks share one process group we can signal.
            self.process = subprocess.Popen(
                self.command(backend_directory),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_in_the_child,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            self._remember_descendants()
            if self.process.poll() is not None:
                raise ServerError(self._failure_message(f"tritonserver exited with code {self.process.returncode}"))
            if self.is_ready():
                self._remember_descendants()
                self._ready = True
                return
            time.sleep(READY_POLL_INTERVAL_S)
        raise ServerError(self._failure_message(f"tritonserver not ready after {self.startup_timeout_s:.0f} s"))

    def _failure_message(self, headline: str) -> str:
        reason = explain_failure(self.log_text())
        detail = f": {reason}" if reason else ""
        return f"{headline}{detail} (full log: {self.log_file})"

    def is_ready(self) -> bool:
        try:
            return self.control(READY_POLL_TIMEOUT_S).server_ready()
        except ServerError:  # not listening yet
            return False

    def control(self, timeout_s: float = DEFAULT_CONTROL_TIMEOUT_S) -> TritonControl:
        """This server's control plane (health, metadata, statistics, metrics, repository)."""
        return TritonControl(self.http_address, self.metrics_address, timeout_s)

    def log_text(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _remember_descendants(self) -> None:
        if self.process is None:
            return
        try:
            parent = psutil.Process(self.process.pid)
            for process in (parent, *parent.children(recursive=True)):
                self._started_pids.add((process.pid, process.create_time()))
        except psutil.NoSuchProcess:
            pass

    @property
    def started_pids(self) -> frozenset[int]:
        """Every PID seen in Triton's process tree since start (Triton, stubs, helpers)."""
        return frozenset(pid for pid, _ in self._started_pids)

    def started_processes_alive(self) -> list[int]:
        """PIDs this launcher started (Triton and its stubs) that are still running: the same
        PID with the same start time (a PID now held by another process is not ours)."""
        return [process.pid for process in self._started_processes() if process.status() != psutil.STATUS_ZOMBIE]

    def _started_processes(self) -> list[psutil.Process]:
        processes = []
        for pid, started in self._started_pids:
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                if process.create_time() == started:
                    processes.append(process)
        return processes

    def stop(self, timeout_s: float | None = None) -> None:
        """SIGTERM Triton's process group, wait (`timeout_s`, by default the launcher's
        `stop_timeout_s`), then SIGKILL whatever is left."""
        if self.process is None:
            return
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        self._remember_descendants()
        if self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=KILLED_EXIT_TIMEOUT_S)
        # Stubs normally exit with Triton; kill any straggler that did not.
        stragglers = self._started_processes()
        for process in stragglers:
            with contextlib.suppress(psutil.Error):
                process.kill()  # psutil checks the start time again: never a reused PID
        wait_gone(stragglers, timeout_s=5.0)
        self.process = None
        for region in Path(SHM_DIR).glob(f"{self.shm_prefix}*"):
            with contextlib.suppress(OSError):
                region.unlink()
        if self._ready:
            shutil.rmtree(self._workdir, ignore_errors=True)


def wait_gone(processes: Sequence[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until each process has exited (a zombie counts: it holds no port, memory or file)
    or `timeout_s` passed; the ones still running.

    A stub whose Triton died is reparented to PID 1 and stays a zombie until that reaps it,
    which some container inits do only every second or two: waiting for the PID to vanish
    (psutil.wait_procs) cost 1.3-2 s per stopped Triton here.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        running = [process for process in processes if _running(process)]
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.01)


def _running(process: psutil.Process) -> bool:
    # A PID can exit between the lookup and the check (psutil raises NoSuchProcess).
    with contextlib.suppress(psutil.Error, FileNotFoundError, ProcessLookupError):
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    return False


def _in_the_child() -> None:
    """In the child before exec (its own session already): SIGTERM Triton if the launcher dies
    without stopping it, and keep the launcher's CPU priority.

    A launcher killed by SIGKILL, or by a SIGTERM it does not handle, would otherwise
    leave Triton (in its own session) running on its ports. And on Linux with scheduler
    autogroups a new session is a new group at normal priority, whatever its nice value: a
    Triton started by `nice -n 19 ...` competed for the CPU like any other session's work.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    niceness = os.nice(0)
    if niceness > 0:
        with contextlib.suppress(OSError), open(AUTOGROUP, "w") as group:
            group.write(str(niceness))


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
