"""Sweeps: range parsing, perf_analyzer's stability rule and the level controller with fake windows,
the sweep files, the CLI's input errors.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/levels/test_sweep.py.
"""

from __future__ import annotations

from tests.unit.levels.test_sweep import sweep


def test_unknown_model_and_unreachable_server_exit_2_before_any_load(triton, tmp_path):
    result = sweep(triton, tmp_path / "nope", "--concurrency", "1:2", "--model", "no_such_model")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "error: " in result.stderr and "no_such_model" in result.stderr
    assert not (tmp_path / "nope").exists()
    unreachable = ["--triton-http", "127.0.0.1:9", "--triton-grpc", "127.0.0.1:9"]
    result = sweep(triton, tmp_path / "down", "--concurrency", "1:2", *unreachable)
    assert result.returncode == 2, result.stderr[-2000:]
    assert not (tmp_path / "down").exists()
