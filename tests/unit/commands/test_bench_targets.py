"""`make bench` judges each level against issue 15's targets (ratios to perf_analyzer in the
same run): the ok/MISS marks are what a reader of bench/results.md takes away."""

from __future__ import annotations

from bench.__main__ import Measurement, ratio_row
from bench.concurrency import EXIT_WITHIN_S, ConcurrencyResult


def measured(tool: str, protocol: str, concurrency: int, infer_per_s: float, p50_us: float, cpu_us: float):
    return Measurement(tool, protocol, concurrency, infer_per_s, p50_us, 2 * p50_us, cpu_us)


def marks(row: str) -> list[str]:
    return [cell.split()[-1] for cell in row.split("|") if cell.strip().endswith(("ok", "MISS"))]


def test_grpc_at_16_needs_nine_tenths_of_perf_analyzer():
    pa = measured("pa", "grpc", 16, 6952, 2096, 94)
    assert marks(ratio_row(pa, measured("suite", "grpc", 16, 6191, 2407, 77)))[0] == "MISS"  # 0.89
    assert marks(ratio_row(pa, measured("suite", "grpc", 16, 6300, 2407, 77)))[0] == "ok"  # 0.906


def test_concurrency_one_is_judged_too():
    pa = measured("pa", "http", 1, 1000, 500, 100)
    assert marks(ratio_row(pa, measured("suite", "http", 1, 850, 500, 100)))[0] == "MISS"  # < 0.9
    assert marks(ratio_row(pa, measured("suite", "http", 1, 920, 500, 100)))[0] == "ok"


def test_cpu_per_request_above_one_and_a_half_times_is_a_miss():
    pa = measured("pa", "http", 4, 1000, 500, 100)
    assert marks(ratio_row(pa, measured("suite", "http", 4, 1000, 500, 151)))[-1] == "MISS"
    assert marks(ratio_row(pa, measured("suite", "http", 4, 1000, 500, 150)))[-1] == "ok"


def test_grpc_concurrency_needs_nine_tenths_of_n_over_t_and_a_timely_exit():
    # 16 users against a 20-ms model: N/T is 800 requests/s, the target 720.
    assert marks(ConcurrencyResult(719.0, 20_400, 3.0).row()) == ["MISS"]
    assert marks(ConcurrencyResult(721.0, 20_400, 3.0).row()) == ["ok"]
    assert marks(ConcurrencyResult(790.0, 20_400, EXIT_WITHIN_S + 1).row()) == ["MISS"]  # did not end in time


def test_concurrency_row_says_what_the_server_and_perf_analyzer_allow():
    # Triton's own 21.8 ms per request bounds any client at 16 / 21.8 ms = 734 requests/s.
    row = ConcurrencyResult(712.0, 21_300, 1.5, server_request_us=21_800.0, reference_per_s=708.0).row()
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[5] == "0.89 MISS"  # the verdict stays the issue's own target
    assert cells[8:] == ["21800", "734", "0.97", "708", "1.01"]
    # Without perf_analyzer (not installed) or statistics, the columns say so instead of guessing.
    assert ConcurrencyResult(712.0, 21_300, 1.5).row().rstrip(" |").endswith("- | - | - | - | -")
