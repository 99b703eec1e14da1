"""`python -m loadtests capacity` refuses bad input before any load: one `error:` line, exit
code 2, Triton's counters untouched, no run directory.

The tests here need a Triton only to show a refused command left it untouched; its runs against
Triton are in tests/system/commands/test_capacity.py, and what it achieves against a known truth
in tests/measurement/test_capacity.py (`make bench-measurement`).
"""

from __future__ import annotations

from tests.helpers import model_stats, run_cli, run_clis, triton_options

MODEL = "sleep_10ms_single"
SLO = "p99<50ms"


def capacity_args(triton, run_dir, *extra: str) -> list[str]:
    return [
        "-m",
        "loadtests",
        "capacity",
        "--model",
        MODEL,
        "--slo",
        SLO,
        *triton_options(triton),
        "--run-dir",
        str(run_dir),
        "--shape",
        "INPUT0:16",
        *extra,
    ]


def test_bad_input_is_refused_before_any_load(triton, tmp_path):
    before = model_stats(triton.http_address, MODEL)
    cases = (
        (["--slo", "p99>5ms"], "upper limits"),
        (["--slo", "p99<fast"], "--slo"),
        (["--growth", "1"], "--growth must be above 1"),
        (["--start-rate", "0"], "--start-rate must be above 0"),
        (["--probe-users", "-1"], "--probe-users must be >= 0"),
        (["--stop-below", "0"], "--stop-below must be a positive rate"),
        (["--shape", "INPUT0:x"], "--shape"),  # refused by the probe's pre-flight: once, and no search
    )
    results = run_clis([capacity_args(triton, tmp_path / "never", *extra) for extra, _ in cases])
    for (extra, message), result in zip(cases, results, strict=True):
        assert result.returncode == 2, (extra, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (extra, result.stderr)
    assert model_stats(triton.http_address, MODEL) == before
    assert not (tmp_path / "never").exists()


def test_a_mix_takes_clauses_on_the_whole_mix_only(triton, tmp_path):
    before = model_stats(triton.http_address, MODEL)
    args = capacity_args(triton, tmp_path / "never", "--slo", f"{MODEL}:p99<50ms")
    args[args.index("--model") : args.index("--model") + 2] = ["--mix", f"{MODEL}:0.5,identity:0.5"]
    args.remove("--slo")
    args.remove(SLO)
    result = run_cli(args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"error: --slo clause '{MODEL}:p99<50ms': a search over a mix judges the whole mix; name no model"
    )
    assert model_stats(triton.http_address, MODEL) == before
    assert not (tmp_path / "never").exists()


def test_a_ttfr_clause_on_a_model_that_does_not_stream_is_refused_before_any_load(triton, tmp_path):
    before = model_stats(triton.http_address, "identity")
    args = ["-m", "loadtests", "capacity", "--model", "identity", "--slo", "ttfr_p99<100ms", *triton_options(triton)]
    result = run_cli([*args, "--run-dir", str(tmp_path / "never"), "--shape", "INPUT0:16"], timeout=120)
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not decoupled" in lines[0], result.stderr
    assert model_stats(triton.http_address, "identity") == before
    assert not (tmp_path / "never").exists()
