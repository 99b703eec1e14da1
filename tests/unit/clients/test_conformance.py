"""Conformance matrix: every Triton datatype x HTTP binary, HTTP JSON, gRPC x batching and
non-batching models x fixed and variable dims x random, zero and --input-data sources,
through the suite's own path (endpoints.prepare_endpoint, workloads/generic.py, the
suite's clients and validator; tests/conformance_probe.py), against a real local Triton that
serves the conformance models (models/conformance_repository, started by this module).

Each cell must either succeed with the identity model's outputs equal to what was sent,
or be one of the cells refused on purpose (REFUSED, each with its reason), refused in
pre-flight with one line and nothing sent.
"""

from __future__ import annotations

from loadtests.server import TEST_REPOSITORY
from models.conformance import CONFORMANCE_REPOSITORY, expected_files


def test_conformance_models_match_their_generator():
    for path, text in expected_files().items():
        assert path.read_text() == text, f"{path} differs from models/conformance.py: run python -m models.conformance"


def test_conformance_models_live_apart_from_the_session_repository():
    """Every Triton the tests start on models/test_repository would otherwise start 28 more
    Python stubs (about 1 GB, 10-15 s): the conformance models have their own repository,
    served by this module's Triton only."""
    assert not sorted(p.name for p in TEST_REPOSITORY.glob("echo_*"))
    assert {path.relative_to(CONFORMANCE_REPOSITORY).parts[0] for path in expected_files()} <= {
        p.name for p in CONFORMANCE_REPOSITORY.iterdir()
    }
