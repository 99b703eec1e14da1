"""Shared fixtures: one real local Triton per test session, on free ports.

It serves the demo repository (tiny weights) and the test repository side by side,
as `python -m loadtests serve --model-repository models/test_repository --include-demo` would.
"""

from __future__ import annotations

import pytest

from loadtests.server import DEMO_REPOSITORY, TEST_REPOSITORY, LocalTriton
from models.build import ensure_built


@pytest.fixture(scope="session")
def tiny_weights():
    return ensure_built("tiny")


@pytest.fixture(scope="session")
def triton(tiny_weights, tmp_path_factory):
    server = LocalTriton(
        [DEMO_REPOSITORY, TEST_REPOSITORY],
        log_file=tmp_path_factory.mktemp("triton") / "triton.log",
        environment={"TRITON_LOADTEST_WEIGHTS_DIR": str(tiny_weights)},
    )
    with server:
        yield server
