"""SLO gates: the --slo grammar, evaluation on exact merged numbers, JUnit, exit codes 0/2/3.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_slo.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from loadtests.run_format.slo import (
    EXIT_SLO_FAILED,
)
from tests.helpers import read_summary, run_cli
from tests.refusals.run.test_slo import _slo_run


def _junit_cases(path) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in ET.parse(path).getroot().iter("testcase")}


def test_passing_clauses_exit_0(triton, tmp_path):
    result, junit = _slo_run(triton, tmp_path, "p99<10s,identity [http]:fail_ratio<0.01,infer_per_s>1")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = read_summary(tmp_path / "run")
    assert [entry["passed"] for entry in summary["slo"]] == [True, True, True]
    (endpoint,) = summary["endpoints"]
    assert summary["slo"][0]["measured"] == endpoint["latency_us"]["p99"] / 1e6
    assert summary["slo"][2]["measured"] == endpoint["throughput_infer_per_s"]
    assert all(case.find("failure") is None for case in _junit_cases(junit).values())
    assert "SLO: all 3 clauses passed" in result.stdout


def test_a_failing_clause_exits_3_and_junit_names_it(triton, tmp_path):
    result, junit = _slo_run(triton, tmp_path, "p99<1us,fail_ratio<0.01")
    assert result.returncode == EXIT_SLO_FAILED, result.stderr[-2000:]
    summary = read_summary(tmp_path / "run")
    p99_us = summary["endpoints"][0]["latency_us"]["p99"]
    assert summary["overall"]["latency_us"]["p99"] == p99_us
    cases = _junit_cases(junit)
    assert set(cases) == {"p99<1us", "fail_ratio<0.01"}
    assert cases["p99<1us"].find("failure").get("message") == f"measured {p99_us:.0f} us, limit 1 us"
    assert cases["fail_ratio<0.01"].find("failure") is None
    # After the fact, on the run directory, the same verdicts (the run's own --slo by default).
    check = run_cli(["-m", "analysis", "check", str(tmp_path / "run"), "--junit", str(tmp_path / "again.xml")])
    assert check.returncode == EXIT_SLO_FAILED, check.stderr
    assert ET.parse(tmp_path / "again.xml").getroot().find(".//failure").get("message") == (
        cases["p99<1us"].find("failure").get("message")
    )


def test_exit_code_3_wins_over_1_for_request_failures(triton, tmp_path):
    negative = tmp_path / "negative.json"  # the `reject` model fails every request with a negative value
    negative.write_text(json.dumps({"data": [{"INPUT0": [-1.0, -1.0, -1.0, -1.0]}]}))
    result, junit = _slo_run(triton, tmp_path, "fail_ratio<0.5", model="reject", extra=("--input-data", str(negative)))
    assert result.returncode == EXIT_SLO_FAILED, result.stderr[-2000:]
    assert read_summary(tmp_path / "run")["endpoints"][0]["failures"] > 0
    assert _junit_cases(junit)["fail_ratio<0.5"].find("failure").get("message").startswith("measured 1, ")
