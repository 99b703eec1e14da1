"""Open-loop traffic: schedules (fake clock), rate plans, the statistics' merge, and the refusals of
bad traffic options.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/traffic/test_open_loop.py.
"""

from __future__ import annotations

import pytest

from tests.helpers import (
    model_stats,
    run_locust,
    triton_options,
)

# --- against the real local Triton ------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--traffic", "constant"], "--traffic constant needs --rate"),
        (["--traffic", "poisson", "--load-shape", "steps", "--shape-args", "targets=1;2"], "add kind=rate"),
        (["--load-shape", "steps", "--shape-args", "kind=rate,targets=5;10"], "needs open-loop traffic"),
        (["--traffic", "poisson", "--rate", "5", "--burstiness", "2"], "--burstiness applies to --traffic gamma"),
        (["--traffic", "gamma", "--rate", "5", "--burstiness", "0"], "--burstiness must be a finite number > 0"),
    ],
)
def test_traffic_errors_exit_2_before_any_load(triton, tmp_path, options, message):
    before = model_stats(triton.http_address, "identity")
    result = run_locust(["TritonHttpUser"], [*triton_options(triton), "--model", "identity", *options])
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert model_stats(triton.http_address, "identity") == before
