"""SLO gates: the --slo grammar, evaluation on exact merged numbers, JUnit, exit codes 0/2/3.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/run/test_slo.py.
"""

from __future__ import annotations

import pytest

from tests.helpers import model_stats, run_locust


# -- end to end against the local Triton ---------------------------------------------
def _slo_run(triton, tmp_path, slo: str, model: str = "identity", extra: tuple[str, ...] = ()):
    junit = tmp_path / "slo.xml"
    options = [
        "--triton-http",
        triton.http_address,
        "--triton-metrics",
        triton.metrics_address,
        "--model",
        model,
        "--run-dir",
        str(tmp_path / "run"),
        "--slo",
        slo,
        "--junit",
        str(junit),
        *extra,
    ]
    result = run_locust(["TritonHttpUser"], options, users=2, run_time="2s")
    return result, junit


@pytest.mark.parametrize(
    ("slo", "why"),
    [
        ("p99<fifty", "clause 'p99<fifty': 'fifty' is not a non-negative number"),
        ("resnet50:p99<50ms", "no endpoint or model 'resnet50' in this run (known: identity, identity [http])"),
        ("late_ratio<0.01", "late_ratio is measured only with open-loop traffic"),
        # identity is not decoupled: its requests are not streamed, a ttfr_/gap_ clause could never be measured
        ("ttfr_p99<100ms", "ttfr_p99 is measured on a decoupled model's streamed responses, and identity is not"),
    ],
)
def test_bad_slo_exits_2_before_any_load(triton, tmp_path, slo, why):
    before = model_stats(triton.http_address, "identity")
    result, junit = _slo_run(triton, tmp_path, slo)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-2000:]
    assert errors[0].startswith(f"error: --slo '{slo}': ") and why in errors[0], errors[0]
    assert "Traceback" not in result.stderr
    assert not junit.exists() and not (tmp_path / "run").exists()
    assert model_stats(triton.http_address, "identity") == before
