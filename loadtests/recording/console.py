"""The end-of-run console table: exact percentiles next to Locust's rounded ones."""

from __future__ import annotations

from loadtests.recording.histograms import EndpointStats


def print_exact_summary(totals: dict[str, EndpointStats]) -> None:
    if not totals:
        return
    header = (
        f"{'Endpoint':<30} {'reqs':>8} {'fails':>6} {'infer':>8} "
        f"{'p50 ms':>9} {'p90 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9} {'max ms':>9}"
    )
    lines = ["Exact latencies (HdrHistogram; ms with microsecond precision):", header]
    for name in sorted(totals):
        stats = totals[name]
        latency = stats.latency_summary_us()
        cells = " ".join(f"{latency[key] / 1000:>9.3f}" for key in ("p50", "p90", "p95", "p99", "p99.9", "max"))
        lines.append(f"{name:<30} {stats.requests:>8} {stats.failure_count:>6} {stats.inferences:>8} {cells}")
    print("\n".join(lines), flush=True)
