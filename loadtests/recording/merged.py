"""Endpoints merged: the whole run ("overall") or one model's endpoints, from exact totals.

Counts add up; percentiles do not, so the merge is of the HdrHistograms themselves.

    overall = merge_stats(run.aggregator.totals.values(), "overall")
    overall.latency_summary_us()["p99"]
"""

from __future__ import annotations

from collections.abc import Iterable

from loadtests.recording.histograms import EndpointStats


def merge_stats(stats: Iterable[EndpointStats], name: str) -> EndpointStats:
    """A new EndpointStats holding the sum of `stats` (which are left unchanged)."""
    stats = list(stats)
    models = {s.model for s in stats}
    protocols = {s.protocol for s in stats}
    merged = EndpointStats(
        name,
        model=models.pop() if len(models) == 1 else "*",
        protocol=protocols.pop() if len(protocols) == 1 else "*",
    )
    for one in stats:
        merged.merge(one)
    return merged


def by_model(totals: dict[str, EndpointStats]) -> dict[str, EndpointStats]:
    """One merged EndpointStats per model that has more than one endpoint (e.g. HTTP and gRPC)."""
    groups: dict[str, list[EndpointStats]] = {}
    for stats in totals.values():
        groups.setdefault(stats.model, []).append(stats)
    return {model: merge_stats(group, model) for model, group in sorted(groups.items()) if len(group) > 1}
