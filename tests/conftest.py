"""Shared fixtures: one real local Triton per test session, on free ports.

It serves the demo repository (tiny weights) and the test repository side by side,
as `python -m loadtests serve --model-repository models/test_repository --include-demo` would.

Markers by fixture use (`make check` runs what needs none of them, `-m "not triton and not
browser and not k8s"`): a test that uses a fixture whose name ends in `triton` (the session's
or its own) is `triton`; one that uses `browser` is `browser`; one that renders the manifests
(`renders`) is `k8s`. A test that starts a Triton, a browser or a k8s tool in its body carries
the marker itself (for a Triton, tests/unit/test_shards.py checks: `make test` runs the unmarked
tests in a background shard at low CPU priority, tests/shards.py).
"""

from __future__ import annotations

import os
import shutil
import time

# Locust patches the standard library with gevent when it is imported. Imported here, before
# anything imports ssl, the patching comes first whatever file a pytest process collects first:
# with the files dealt to several processes (tests/shards.py), a file importing locust that came
# first after ssl was loaded failed to collect (RecursionError in urllib3's SSLContext).
import locust  # noqa: F401  (first, on purpose)
import pytest

from loadtests.server import DEMO_REPOSITORY, TEST_REPOSITORY, LocalTriton, TritonPorts
from models.build import ensure_built
from tests.helpers import THROWAWAY_STOP_S, serving, start_triton
from tests.shards import misplaced


@pytest.fixture
def held_ports():
    """Three ports where nothing listens, held for the whole test (TritonPorts.held(): a port only
    free a moment before may be taken by the time a command connects)."""
    with TritonPorts.held() as ports:
        yield ports


@pytest.fixture(scope="session")
def tiny_weights():
    return ensure_built("tiny")


# The session Triton loads its 26 models 16 at a time (Triton's default loads about 2 at a time
# here): 6 s instead of 9 s on a quiet machine, most of it the Python-backend stubs starting.
LOAD_THREADS = ["--model-load-thread-count=16"]


@pytest.fixture(scope="session")
def triton(tiny_weights, tmp_path_factory):
    server = LocalTriton(
        [DEMO_REPOSITORY, TEST_REPOSITORY],
        log_file=tmp_path_factory.mktemp("triton") / "triton.log",
        environment={"TRITON_LOADTEST_WEIGHTS_DIR": str(tiny_weights)},
        extra_args=LOAD_THREADS,
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    yield from serving(server)


@pytest.fixture(autouse=True)
def _session_triton_alive(request):
    """A session Triton that died during an earlier test is started again before the next test that
    uses it, its log kept beside the new one: one crash fails the test it happened in, not every
    later test of the shard. (The bundled tritonserver once aborted with heap corruption,
    `malloc(): unaligned tcache chunk detected`, Signal 6, under a test that only sent inference
    requests, and the 60 tests after it in that shard failed on a refused connection.)"""
    if "triton" in request.fixturenames:
        server = request.getfixturevalue("triton")
        if server.process is None or server.process.poll() is not None:
            code = server.process.returncode if server.process is not None else None
            kept = server.log_file.with_name(f"{server.log_file.stem}.died-{time.time():.0f}.log")
            if server.log_file.exists():
                shutil.copy(server.log_file, kept)
            print(f"the session Triton had died (exit code {code}, its log: {kept}): started again")
            server.stop()
            start_triton(server)
    yield


def pytest_collection_modifyitems(items):
    wrong = [
        f"{item.nodeid}: {problem}"
        for item in items
        if (problem := misplaced(item.nodeid, getattr(item, "fixturenames", ())))
    ]
    if wrong:
        raise pytest.UsageError("tests in the wrong folder (tests/shards.py):\n" + "\n".join(wrong))


# `make test` sets this: on the README's test command every test runs, so a missing tool
# (the manifest checkers, the browser) is a failure naming its installer, not a silent skip.
REQUIRE_ALL = os.environ.get("TRITON_LOADTEST_REQUIRE_ALL") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under `make test`, which must run every test: {reason}"
