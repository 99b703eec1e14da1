"""Distributed runs end with every worker's last requests in the counts, or the loss named.

A worker that is slow around the stop (a loaded machine; here frozen with SIGSTOP) answers
the master's stop late. Whatever it sent, Triton counted; summary.json must count it too,
or name the worker in `faults`. Driven through the command line, like a user runs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil

from loadtests.server import TritonPorts
from tests.helpers import REPO_ROOT, model_stats, read_summary, triton_options

RUN_S = 8
# The worker is frozen from this long before the run-time limit until this long after the
# master announced it: across the moment the master tells its workers to stop.
FREEZE_BEFORE_END_S = 1.5
FREEZE_AFTER_END_S = 1.0


def _watch(stream, lines: list[str], seen: dict[str, threading.Event]) -> None:
    for line in stream:
        lines.append(line)
        for marker, event in seen.items():
            if marker in line:
                event.set()


def test_a_worker_frozen_at_the_stop_is_counted_or_named(triton, tmp_path):
    model, run_dir = "sleep", tmp_path / "run"
    port = str(TritonPorts.free().http)  # not Locust's default 5557: other masters may be running
    before = model_stats(triton.http_address, model)
    command = [
        sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary",
        "-u", "4", "-r", "40", "-t", f"{RUN_S}s", "TritonHttpUser",
        *triton_options(triton), "--model", model, "--shape", "INPUT0:16", "--run-dir", str(run_dir),
        "--traffic", "constant", "--rate", "40",
        "--processes", "2", "--master-bind-port", port, "--master-port", port,
    ]  # fmt: skip
    master = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    lines: list[str] = []
    spawned, limit = threading.Event(), threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(master.stderr, lines, {"Sending spawn jobs": spawned, "--run-time limit": limit})
    )
    watcher.start()
    frozen = None
    try:
        assert spawned.wait(120), "".join(lines)[-3000:]
        spawned_at = time.monotonic()
        worker = psutil.Process(master.pid).children()[0]
        # Locust's run-time clock starts as the master sends the spawn jobs: freeze shortly before it ends.
        limit.wait(max(0.0, RUN_S - FREEZE_BEFORE_END_S - (time.monotonic() - spawned_at)))
        if not limit.is_set():
            os.kill(worker.pid, signal.SIGSTOP)
            frozen = worker.pid
        assert limit.wait(30), "".join(lines)[-3000:]
        time.sleep(FREEZE_AFTER_END_S)
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
            frozen = None
        master.stdout.read()  # (stderr is the watcher's)
        master.wait(timeout=120)
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
        if master.poll() is None:
            master.kill()
        watcher.join(10)
        master.stdout.close()
        master.stderr.close()
    assert master.returncode == 0, "".join(lines)[-3000:]
    served = model_stats(triton.http_address, model)["requests"] - before["requests"]
    summary = read_summary(run_dir)
    (endpoint,) = summary["endpoints"]
    faults = summary["faults"]
    named = faults["workers_lost"] or faults.get("workers_without_final_report")
    if named:  # the loss is on the record, with Triton's count of what the client could not report
        assert faults["unreported_requests_estimate"][model] == served - endpoint["requests"]
    else:
        assert served == endpoint["requests"], (served, endpoint["requests"], faults)
