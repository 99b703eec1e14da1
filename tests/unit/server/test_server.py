"""The local Triton: demo models over HTTP and gRPC, dynamic batching, BYTES, clean teardown."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from loadtests.server import TEST_REPOSITORY, LocalTriton
from loadtests.server.launcher import wait_gone


def test_stop_never_kills_a_process_that_reused_a_remembered_pid():
    """A stub that exited mid-run (a reload, a restart) leaves its PID behind; on a busy
    machine the kernel hands that PID to another process (pid_max is 32768 here). stop()
    must only kill what this launcher started, not whatever holds the number now: the
    identity is the PID and the process's start time."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server = LocalTriton([TEST_REPOSITORY])
        # As if this launcher had seen an earlier process with the bystander's PID.
        server._started_pids.add((bystander.pid, psutil.Process(bystander.pid).create_time() - 100.0))
        assert server.started_processes_alive() == []
        server.process = subprocess.Popen(["true"])
        server.process.wait()
        server.stop(timeout_s=1)
        assert bystander.poll() is None, "stop() killed a process it did not start"
    finally:
        bystander.kill()
        bystander.wait()


def test_a_zombie_counts_as_gone_when_stop_waits_for_the_stubs():
    """A stub whose Triton was killed is reparented to PID 1 and stays a zombie until that
    reaps it (every second or two under some container inits): it holds nothing, so stop()
    does not wait for it; a process still running is waited for."""
    # The parent starts a child and never reaps it: once killed, the child stays a zombie.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; c = subprocess.Popen(['sleep', '60']); "
            "print(c.pid, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        assert wait_gone([child], timeout_s=0.0) == [child]  # running
        child.kill()
        while child.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        assert wait_gone([child], timeout_s=0.0) == []
        assert psutil.pid_exists(child.pid)  # not reaped: what psutil.wait_procs would wait for
    finally:
        parent.kill()
        parent.wait()


def test_free_ports_are_three_different_ports():
    """TritonPorts.free() picked each port by binding port 0 and closing it: the kernel could hand
    the same port out twice in one pick (a tracing test's Triton once got --http-port and
    --metrics-port both 42737)."""
    from loadtests.server import TritonPorts

    picks = [TritonPorts.free() for _ in range(3000)]
    repeated = [ports for ports in picks if len({ports.http, ports.grpc, ports.metrics}) < 3]
    assert repeated == [], repeated[:5]


def test_held_ports_cannot_be_taken_and_refuse_connections_until_released():
    """TritonPorts.held(): what a test that needs "nothing listens here" connects to. A port only
    free a moment before was taken by the time a probe connected (fresh53: 'connection reset')."""
    import errno
    import socket

    from loadtests.server import TritonPorts

    with TritonPorts.held() as ports:
        assert len({ports.http, ports.grpc, ports.metrics}) == 3
        for port in (ports.http, ports.grpc, ports.metrics):
            with socket.socket() as other:
                try:
                    other.bind(("127.0.0.1", port))
                except OSError as error:
                    assert error.errno == errno.EADDRINUSE
                else:
                    raise AssertionError(f"port {port} was taken while held")
            with socket.socket() as client:
                assert client.connect_ex(("127.0.0.1", port)) == errno.ECONNREFUSED
    with socket.socket() as other:
        other.bind(("127.0.0.1", ports.http))  # released at the end of the block
