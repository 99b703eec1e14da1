"""`locust ... --baseline DIR --gate CLAUSES`: a load test gates itself against a baseline run.

Against a Triton of this module's own in explicit model-control mode, with `sleep_10ms_single`
(one instance, 10 ms per request): a baseline run, the same configuration again (passes), then
the same model reloaded with `sleep_ms` 40 over the same name, four times slower (fails, exit
code 3, the clause named, a JUnit failure). The effect is 4x against a noise of a few percent
on this model's p50 (its sleep sets it), so the verdicts do not depend on the host's speed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from loadtests.server import TEST_REPOSITORY
from loadtests.tuning.repository_api import RepositoryApi
from tests.helpers import explicit_mode_triton, model_stats, run_against_triton

MODEL = "sleep_10ms_single"
OPTIONS = ["--model", MODEL, "--shape", "INPUT0:16"]


@pytest.fixture(scope="module")
def explicit_triton(tmp_path_factory):
    yield from explicit_mode_triton(tmp_path_factory.mktemp("gate-triton"), [TEST_REPOSITORY], [MODEL])


@pytest.fixture(scope="module")
def baseline(explicit_triton, tmp_path_factory):
    run = run_against_triton(
        explicit_triton, tmp_path_factory.mktemp("baseline") / "run", ["TritonHttpUser"], OPTIONS, users=1
    )
    return run.run_dir


def test_the_same_configuration_passes_its_gate(explicit_triton, baseline, tmp_path):
    gate = ["--baseline", str(baseline), "--gate", "p50<+50%,fail_ratio<+1%"]
    run = run_against_triton(explicit_triton, tmp_path / "run", ["TritonHttpUser"], [*OPTIONS, *gate], users=1)
    output = run.result.stdout + run.result.stderr
    assert f"Gate against {baseline}" in output
    assert "Gate: no clause regressed beyond noise (2 checked)" in output, output[-3000:]
    assert (run.run_dir / "gate" / "compare.html").is_file()


def test_the_same_model_reloaded_four_times_slower_fails_its_gate(explicit_triton, baseline, tmp_path):
    api = RepositoryApi(explicit_triton.http_address)
    config = api.config(MODEL)
    config["parameters"]["sleep_ms"]["string_value"] = "40"
    api.load(MODEL, config)
    try:
        gate = ["--baseline", str(baseline), "--gate", "p50<+50%,fail_ratio<+1%", "--junit", str(tmp_path / "slo.xml")]
        run = run_against_triton(
            explicit_triton, tmp_path / "run", ["TritonHttpUser"], [*OPTIONS, *gate], users=1, expect_exit=3
        )
    finally:
        api.load(MODEL, None)
    output = run.result.stdout + run.result.stderr
    (line,) = [line.strip() for line in output.splitlines() if line.strip().startswith("p50<+50% [")]
    assert line.endswith(": regressed"), line
    assert "Gate: 1 of 2 clause(s) regressed (exit code 3)" in output
    suite = ET.parse(tmp_path / "slo.gate.xml").getroot().find("testsuite")
    assert [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None] == ["p50<+50%"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--gate", "p50<+10%"], "error: --gate needs --baseline"),
        (
            ["--baseline", "/nonexistent/run", "--gate", "p50<+10%"],
            "error: --baseline /nonexistent/run: no summary.json",
        ),
        (["--baseline", "/tmp", "--gate", "p50<10ms"], "write METRIC OP CHANGE%"),
    ],
)
def test_a_gate_that_cannot_run_is_refused_before_any_load(explicit_triton, tmp_path, options, message):
    before = model_stats(explicit_triton.http_address, MODEL)
    run = run_against_triton(
        explicit_triton, tmp_path / "run", ["TritonHttpUser"], [*OPTIONS, *options], users=1, expect_exit=2
    )
    errors = [line for line in run.result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], run.result.stderr[-2000:]
    assert model_stats(explicit_triton.http_address, MODEL) == before
