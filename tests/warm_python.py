"""A warm interpreter for the tests' `python -m locust ...` commands (tests/helpers.py's run_cli).

Most of a short Locust command's CPU is Python starting and importing Locust, gevent, numpy, gRPC
and the suite: about 1 of a refusal's 1.35 CPU-s. `make test` runs hundreds of them on two cores
(`tests/refusals/` alone, measured one after the other on a quiet 2-core host: 305 CPU-s and 235 s
cold, 182 CPU-s and 149 s warm).

This module, run as `python -m tests.warm_python`, imports those once and then forks a child per
command; the child takes the command's working directory, environment, arguments and output
files, and runs the module as `python -m` would (`runpy`, `__main__`), so it exits, prints and
raises as a new interpreter does.

What a child does not do again is what the server imported: Locust and the suite's modules with
everything they import, not the suite's locustfile (its import installs the suite on Locust's
events; a command whose locustfile does not import the suite gets plain Locust). None of it
reads the environment, the arguments or the working directory at import (the suite reads them in
functions), so a command reads them in the child.
Random state is drawn again in each child (Python's `random` at the fork, numpy's global one
here), as a new interpreter would.

Output written while those modules were imported (a warning at import, say) goes to the server's
stderr, not the command's: the tests that start `python` themselves (the console test in
tests/system/run/test_first_hour.py) still see it. A command whose environment changes how Python
or gevent starts (PYTHON*, GEVENT*, LOCUST_SKIP_*) starts cold; so does every command where
TRITON_LOADTEST_COLD_PYTHON is set.

Protocol: JSON lines. The client writes {"id", "module", "argv", "cwd", "env", "stdout", "stderr"};
the server answers {"id", "pid"} when the child started and {"id", "exit"} (os.waitstatus_to_exitcode)
when it ended. End of input ends the server and kills its children.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
WARM_MODULES = ("locust",)
# The suite's modules, but not its locustfile: importing that installs the suite on Locust's
# events (loadtests.run.install), which a command whose locustfile does not import the suite
# must not inherit.
PREIMPORTS = ("locust", "numpy", "grpc", "tritonclient.grpc", "tritonclient.http", "loadtests.run")
PREIMPORTS += ("loadtests.workloads.users", "loadtests.workloads.kinds")
COLD_ENVIRONMENT = ("PYTHON", "GEVENT", "LOCUST_SKIP", "LOCUST_PLAYWRIGHT")
REAP_EVERY_S = 0.02
DISABLE = "TRITON_LOADTEST_COLD_PYTHON"  # set (to anything): every command starts a new interpreter


# --- the server ------------------------------------------------------------------------------


def serve() -> dict:
    """The server's loop; returns only in a forked child, with the request it is to run."""
    import importlib

    for name in PREIMPORTS:
        importlib.import_module(name)
    import gevent
    from gevent import monkey

    select = monkey.get_original("select", "select")
    fork = monkey.get_original("os", "fork")
    waitpid = monkey.get_original("os", "waitpid")
    children: dict[int, int] = {}  # pid: request id
    pending = b""

    def answer(message: dict) -> None:
        os.write(1, (json.dumps(message) + "\n").encode())

    while True:
        readable, _, _ = select([0], [], [], REAP_EVERY_S)
        if readable:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                for pid in children:
                    os.kill(pid, signal.SIGKILL)
                os._exit(0)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                pid = fork()
                if pid == 0:
                    gevent.reinit()
                    return request
                children[pid] = request["id"]
                answer({"id": request["id"], "pid": pid})
        while children:
            try:
                pid, status = waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            answer({"id": children.pop(pid), "exit": os.waitstatus_to_exitcode(status)})


def become(request: dict) -> None:
    """In the child: take the command's place, then run its module as `python -m` does."""
    import runpy

    import numpy

    numpy.random.seed()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    sys.argv = [request["module"], *request["argv"]]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


# --- the client (in the test process) --------------------------------------------------------


def takes(args: list[str], env: dict[str, str] | None) -> bool:
    """Whether a `python *args` command may run warm."""
    if os.environ.get(DISABLE) or len(args) < 2 or args[0] != "-m" or args[1] not in WARM_MODULES:
        return False
    return not any(name.startswith(COLD_ENVIRONMENT) for name in env or {})


class _Server:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="warm-python-"))
        atexit.register(shutil.rmtree, self.directory, ignore_errors=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.warm_python"],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.ids = itertools.count()
        self.lock = threading.Lock()
        self.answers: dict[int, dict] = {}
        self.closed = False
        self.changed = threading.Condition(self.lock)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            message = json.loads(line)
            with self.changed:
                self.answers.setdefault(message["id"], {}).update(message)
                self.changed.notify_all()
        with self.changed:  # the server died: so did its children
            self.closed = True
            self.changed.notify_all()

    def run(self, args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        command = [sys.executable, *args]
        with self.lock:
            ident = next(self.ids)
        stdout, stderr = self.directory / f"{ident}.out", self.directory / f"{ident}.err"
        request = {"id": ident, "module": args[1], "argv": args[2:], "cwd": str(REPO_ROOT), "env": env}
        request |= {"stdout": str(stdout), "stderr": str(stderr)}
        with self.lock:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        with self.changed:
            done = lambda: self.closed or "exit" in self.answers.get(ident, {})  # noqa: E731
            ended = self.changed.wait_for(done, timeout)
            if not ended:
                pid = self.answers.get(ident, {}).get("pid")
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                self.changed.wait_for(done)
            if self.closed and "exit" not in self.answers.get(ident, {}):
                raise RuntimeError(
                    "the warm Python server ended (its stderr is the tests' own): rerun with "
                    f"{DISABLE}=1 to start each command cold"
                )
            code = self.answers.pop(ident)["exit"]
        output, errors = stdout.read_text(), stderr.read_text()
        stdout.unlink(missing_ok=True)
        stderr.unlink(missing_ok=True)
        if not ended:
            raise subprocess.TimeoutExpired(command, timeout, output=output, stderr=errors)
        return subprocess.CompletedProcess(command, code, output, errors)


_server: _Server | None = None
_starting = threading.Lock()


def run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python *args` from the repository root, as subprocess.run(capture_output, text) would
    give it, run by a fork of the warm server (started at the first call)."""
    global _server
    with _starting:
        if _server is None or _server.process.poll() is not None:
            _server = _Server()
    return _server.run(args, env, timeout)


if __name__ == "__main__":
    become(serve())
