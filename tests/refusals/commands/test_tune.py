"""`python -m loadtests tune` against a real Triton in explicit model-control mode.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/commands/test_tune.py.
"""

from __future__ import annotations

from tests.helpers import model_stats, run_cli, triton_options
from tests.unit.commands.test_tune import assert_one_line_error

SLO = "p99<200ms"


def tune_args(triton, out_dir, *extra: str) -> list[str]:
    return ["-m", "loadtests", "tune", *triton_options(triton), "--out", str(out_dir), *extra]


def test_a_server_not_in_explicit_mode_is_refused_with_one_line(triton, tmp_path):
    before = model_stats(triton.http_address, "sleep_10ms_single")
    args = tune_args(
        triton, tmp_path / "never", "--model", "sleep_10ms_single", "--vary", "instances=1,2", "--slo", SLO
    )
    result = run_cli(args)
    assert_one_line_error(result, "--model-control-mode=explicit")
    assert model_stats(triton.http_address, "sleep_10ms_single") == before
    assert not (tmp_path / "never").exists()
