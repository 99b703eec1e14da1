"""Percentile confidence intervals (loadtests/run_format/confidence.py) and `@95%` SLO gates on them.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run_format/test_confidence.py.
"""

from __future__ import annotations


def test_confident_gates_end_to_end(triton, tmp_path):
    """A short run against `sleep_batch` (20 ms per execution, so 2 users send at most ~100
    requests/s): the median is bounded both ways, p99.9 cannot be bounded at all."""
    from loadtests.run_format.slo import EXIT_SLO_FAILED
    from tests.helpers import read_summary, run_cli, run_locust, triton_options

    run_dir = tmp_path / "run"
    slo = "p50<10s@95%,p50<1ms@95%,p99.9<10s@95%"
    options = [*triton_options(triton), "--model", "sleep_batch", "--shape", "INPUT0:16"]
    options += ["--run-dir", str(run_dir), "--slo", slo]
    result = run_locust(["TritonHttpUser"], options, users=2, run_time="3s")
    assert result.returncode == EXIT_SLO_FAILED, result.stderr[-2000:]
    summary = read_summary(run_dir)
    (endpoint,) = summary["endpoints"]
    assert endpoint["requests"] < 3688  # too few for p99.9 at 95 %, whatever the machine does
    assert [entry["verdict"] for entry in summary["slo"]] == ["pass", "fail", "inconclusive"]
    assert summary["slo"][2]["bounds"][1] is None
    assert summary["overall"]["latency_ci_us"]["p50"] == endpoint["latency_ci_us"]["p50"]
    assert "INCONCLUSIVE  p99.9<10s@95%" in result.stdout
    assert "not enough requests for p99.9 at 95 % (needs 3,688)" in result.stdout
    # A finished run checked at another confidence: computed from its hdr/ logs.
    checked = run_cli(["-m", "analysis", "check", str(run_dir), "--slo", "p50<10s@99%"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "(99 % interval" in checked.stdout
    # The report's interval table: the same bounds, and p99.9 said to need more requests.
    from analysis.report import write_report

    write_report(run_dir)
    markdown = (run_dir / "report.md").read_text()
    assert "How sure the percentiles are" in markdown
    lower, upper = endpoint["latency_ci_us"]["p50"]
    assert f"{lower / 1000:.3f} to {upper / 1000:.3f}" in markdown
    assert "not bounded (needs 3,688 requests)" in markdown
