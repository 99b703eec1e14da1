"""perf_analyzer's stability rule, pure: when a sweep level's trials are stable, when it is over.

From src/inference_profiler.cc in triton-inference-server/perf_analyzer (`DetermineStability`,
`IsInferWindowStable`, `IsLatencyWindowStable`, `IsDoneProfiling`); the suite stabilises on
p95 as `perf_analyzer --percentile=95` does.
"""

from __future__ import annotations

from collections.abc import Sequence

STABILITY_WINDOWS = 3  # perf_analyzer's load_parameters_.stability_window
DEFAULT_STABILITY_PERCENT = 10.0
DEFAULT_MAX_TRIALS = 10
DEFAULT_SETTLE_WINDOWS = 1


def is_stable(throughputs: Sequence[float], latencies: Sequence[float], stability_percent: float) -> bool:
    """perf_analyzer's DetermineStability over the last 3 trials (throughput infer/s, p95 µs).

    >>> is_stable([100, 105, 109], [2000, 2100, 2150], 10)
    True
    >>> is_stable([100, 105, 111], [2000, 2100, 2150], 10)
    False
    """
    n = STABILITY_WINDOWS
    if len(throughputs) < n or len(latencies) < n:
        return False
    last_t, last_l = list(throughputs[-n:]), list(latencies[-n:])
    if min(last_t) <= 0 or min(last_l) <= 0:
        return False  # a trial without inferences is never stable
    bound = 1 + stability_percent / 100
    return max(last_t) / min(last_t) <= bound and max(last_l) / min(last_l) <= bound


def over_latency_limit(latencies: Sequence[float], limit_us: float) -> bool:
    """perf_analyzer's IsDoneProfiling threshold: once 3 trials exist, one of the last 3 at or over it.

    >>> over_latency_limit([10, 30, 12], 25), over_latency_limit([30, 10], 25), over_latency_limit([30] * 3, 0)
    (True, False, False)
    """
    return limit_us > 0 and len(latencies) >= STABILITY_WINDOWS and max(latencies[-STABILITY_WINDOWS:]) >= limit_us
