"""server_stats.json: a run's raw statistics snapshots, its delta and each interval's.

{"http_address", "models", "interval_s",
 "snapshots": [{"time_s", "models": {model: {version: Triton's model_stats entry}}}],
 "deltas": {"total": {model: ModelDelta}, "intervals": [{"start_s", "end_s", "models"}]},
 "restarts": [...], "errors": [{"time_s", "error"}], "errors_dropped": n}
"""

from __future__ import annotations

from typing import Any

from loadtests.recording.server_stats import StatsSnapshot, deltas_json, interval_deltas, restarts, total_delta


def server_stats_document(
    http_address: str,
    models: list[str],
    interval_s: float,
    snapshots: list[StatsSnapshot],
    errors: list[dict[str, Any]],
    errors_dropped: int,
) -> dict[str, Any]:
    """The content of server_stats.json (analysis/dataset.py reads its intervals back)."""
    return {
        "http_address": http_address,
        "models": models,
        "interval_s": interval_s,
        "snapshots": [snapshot.to_json() for snapshot in snapshots],
        "deltas": {
            "total": deltas_json(total_delta(snapshots)),
            "intervals": [
                {"start_s": start, "end_s": end, "models": deltas_json(deltas)}
                for start, end, deltas in interval_deltas(snapshots)
            ],
        },
        "restarts": restarts(snapshots),
        "errors": errors,
        "errors_dropped": errors_dropped,
    }
