"""The one reader of Triton's control plane (loadtests/clients/control.py), against the real Triton.

Every answer is compared with what Triton itself says (its statistics after a known number
of inferences, tritonclient's reading of the same config). A fake server appears only for
the fault a real Triton cannot produce on demand: one that accepts a connection and never
answers.
"""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtests.clients.control import TritonControl
from loadtests.errors import ServerError

REPO_ROOT = Path(__file__).resolve().parents[3]
CONTROL_MODULE = REPO_ROOT / "loadtests" / "clients" / "control.py"
# A timeout far below the 5 s default, so an answer within a few of them shows the given one applied.
SHORT_TIMEOUT_S = 0.3
NEVER_ANSWERS_LIMIT_S = 3.0


@pytest.fixture
def never_answers():
    """host:port of a socket that accepts connections (the kernel's backlog does) and never replies."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_that_never_answers_times_out(never_answers):
    control = TritonControl(never_answers, never_answers, timeout_s=SHORT_TIMEOUT_S)
    for call in (
        control.server_ready,
        control.server_metadata,
        lambda: control.statistics(["identity"]),
        control.metrics_text,
        control.repository_index,
        lambda: control.load("identity", config={"max_batch_size": 1}, timeout_s=SHORT_TIMEOUT_S),
    ):
        start = time.monotonic()
        with pytest.raises(ServerError, match="timed out"):
            call()
        assert time.monotonic() - start < NEVER_ANSWERS_LIMIT_S


GEVENT_PROBE = """
from gevent import monkey; monkey.patch_all()
import sys, time, gevent
from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import open_control
from loadtests.errors import ServerError
ticks = []
def tick():
    while True:
        ticks.append(time.monotonic()); gevent.sleep(0.02)
ticker = gevent.spawn(tick)
gevent.sleep(0)
try:
    TritonControl(sys.argv[1], timeout_s=1.0).statistics(["identity"])
except ServerError as error:
    print("error:", error)
print("ticks", len(ticks))
"""


def test_a_scrape_under_gevent_lets_other_greenlets_run(never_answers):
    # Inside Locust the standard library is monkey-patched: a scrape waiting on a frozen Triton
    # must yield to the users' greenlets, not block the loop for its whole timeout.
    done = subprocess.run(
        [sys.executable, "-c", GEVENT_PROBE, never_answers], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "timed out" in done.stdout
    ticks = int(done.stdout.split("ticks")[-1])
    assert ticks > 5, done.stdout  # a 1 s wait at 20 ms per tick: about 50 when cooperative, 1 when not


# -- the shape: one module builds Triton's control URLs --------------------------------------------
SCANNED = ("loadtests", "analysis", "locustfile.py")


def _literal_parts(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """(line, text, built) of every string literal that is not a docstring; `built` for f-string parts."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    docstrings.add(id(value))
                    parts.append((node.lineno, value.value, True))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            parts.append((node.lineno, node.value, False))
    return parts


def control_urls_outside_control() -> list[str]:
    """Where a module other than clients/control.py spells a Triton HTTP route ("/v2...") or
    builds a "/metrics" URL (plain "/metrics" strings are the load generator's own exporter)."""
    found = []
    files = [
        p
        for name in SCANNED
        for p in ([REPO_ROOT / name] if name.endswith(".py") else (REPO_ROOT / name).rglob("*.py"))
    ]
    for path in files:
        if path == CONTROL_MODULE:
            continue
        for line, text, built in _literal_parts(ast.parse(path.read_text(), str(path))):
            if "/v2" in text or (built and "/metrics" in text):
                found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {text!r}")
    return found


def test_only_the_control_module_builds_control_urls():
    assert control_urls_outside_control() == []
