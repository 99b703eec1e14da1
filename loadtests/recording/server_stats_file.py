"""Triton's statistics in the run directory: streamed as they arrive, summed at the end.

    server_snapshots.jsonl   one line per snapshot, appended as it is taken:
                             {"time_s", "models": {model: {version: Triton's model_stats entry}}}
    server_intervals.jsonl   one line per interval between two consecutive snapshots:
                             {"start_s", "end_s", "models": {model: ModelDelta}}
    server_stats.json        at the end: {"http_address", "models", "interval_s", "snapshot_count",
                             "snapshots_file", "intervals_file", "deltas": {"total": {model: ModelDelta}},
                             "restarts": [...], "errors": [{"time_s", "error"}], "errors_dropped": n}

Streamed, not held: a soak polls for hours and a snapshot is 5-14 KB of Python objects
per model (server_stats_series.py keeps only running sums). Each line is flushed as written,
so a master that is killed mid-run leaves every snapshot taken so far. Runs written before
the streaming kept both lists inside server_stats.json ("snapshots", "deltas"."intervals");
analysis/dataset.py reads either form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from loadtests.recording.server_stats import StatsSnapshot, deltas_json
from loadtests.recording.server_stats_series import Interval, SnapshotSeries
from loadtests.run_format.files import SERVER_INTERVALS_JSONL, SERVER_SNAPSHOTS_JSONL

_COMPACT = (",", ":")


class ServerStatsLog:
    """Appends each snapshot and the interval it closes to the run directory's two JSON-lines files.

    Example:
        log = ServerStatsLog(run_dir)
        log.write(snapshot, series.add(snapshot))
        log.close()
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._snapshots: IO[str] = open(self.directory / SERVER_SNAPSHOTS_JSONL, "w", encoding="utf-8")  # noqa: SIM115
        self._intervals: IO[str] = open(self.directory / SERVER_INTERVALS_JSONL, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, snapshot: StatsSnapshot, interval: Interval | None) -> None:
        self._snapshots.write(json.dumps(snapshot.to_json(), separators=_COMPACT) + "\n")
        self._snapshots.flush()
        if interval is not None:
            start_s, end_s, deltas = interval
            line = {"start_s": start_s, "end_s": end_s, "models": deltas_json(deltas)}
            self._intervals.write(json.dumps(line, separators=_COMPACT) + "\n")
            self._intervals.flush()

    def close(self) -> None:
        self._snapshots.close()
        self._intervals.close()


def server_stats_document(
    http_address: str,
    models: list[str],
    interval_s: float,
    series: SnapshotSeries,
    errors: list[dict[str, Any]],
    errors_dropped: int,
    streamed: bool,
) -> dict[str, Any]:
    """The content of server_stats.json; `streamed` when the two JSON-lines files were written."""
    files = {"snapshots_file": SERVER_SNAPSHOTS_JSONL, "intervals_file": SERVER_INTERVALS_JSONL} if streamed else {}
    return {
        "http_address": http_address,
        "models": models,
        "interval_s": interval_s,
        "snapshot_count": series.count,
        **files,
        "deltas": {"total": deltas_json(series.total_delta())},
        "restarts": series.restarts,
        "errors": errors,
        "errors_dropped": errors_dropped,
    }
