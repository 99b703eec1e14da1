"""The session Triton, dead after one test, is alive for the next (tests/conftest.py's
_session_triton_alive): the bundled tritonserver once aborted mid-shard with heap corruption, and
every later test of that shard failed on a refused connection. Killed here on purpose, in order."""

from __future__ import annotations

import os
import signal

from tests.helpers import model_stats

PIDS: list[int] = []


def test_a_test_kills_the_session_triton(triton):
    PIDS.append(triton.process.pid)
    os.killpg(triton.process.pid, signal.SIGKILL)
    triton.process.wait(timeout=30)
    assert triton.process.poll() is not None


def test_the_next_test_gets_it_started_again_with_the_dead_ones_log_kept(triton):
    assert PIDS and triton.process.pid != PIDS[0] and triton.process.poll() is None
    assert model_stats(triton.http_address, "identity")["requests"] >= 0  # it answers, its models loaded
    assert list(triton.log_file.parent.glob(f"{triton.log_file.stem}.died-*.log"))
