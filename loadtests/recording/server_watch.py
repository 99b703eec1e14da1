"""Triton's side of a run: /stats snapshots and Prometheus samples, polled on the master.

Read on the master (or the single process) only, never by every worker: one poller per
run, whatever the worker count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gevent

from loadtests.connection_security import ConnectionSecurity
from loadtests.recording.metrics import MetricsPoller
from loadtests.recording.server_stats import StatsSnapshot
from loadtests.recording.stats_poller import ServerStatsPoller

# The last snapshot and scrape at the end of a run wait at most this long each: a frozen or
# dead Triton must not hold up the end of the run (the failure is recorded in the errors).
END_SCRAPE_TIMEOUT_S = 1.0


class ServerWatch:
    """Starts both pollers at test start; at the end writes their files and returns the breakdown.

    Example:
        watch = ServerWatch("127.0.0.1:8000", "127.0.0.1:8002", ["bert_qa"], interval_s=5.0)
        watch.start(); ...; summary["server"] = watch.stop(run_directory)
    """

    def __init__(
        self,
        http_address: str,
        metrics_address: str,
        models: list[str],
        interval_s: float,
        before_tick: Callable[[], None] | None = None,
        metrics_csv: Path | None = None,
        security: ConnectionSecurity | None = None,
        stats_dir: Path | None = None,
        on_snapshot: Callable[[StatsSnapshot], None] | None = None,
    ) -> None:
        # Streamed to the run directory as taken (server_snapshots.jsonl, server_intervals.jsonl).
        self.stats = ServerStatsPoller(
            http_address,
            models,
            interval_s=interval_s,
            before_tick=before_tick,
            security=security,
            stream_to=stats_dir,
            on_snapshot=on_snapshot,
        )
        # Streamed to the run directory as scraped (server_metrics.csv), not held in memory.
        self.metrics = MetricsPoller(
            metrics_address, interval_s=interval_s, before_tick=before_tick, csv_path=metrics_csv, security=security
        )

    def start(self) -> None:
        self.stats.start()
        self.metrics.start()

    def stop(self, directory) -> dict:
        """Final snapshots, server_stats.json (the streamed files closed) and server_metrics.csv;
        returns summary.json's `server`."""
        self.stats.timeout_s = min(self.stats.timeout_s, END_SCRAPE_TIMEOUT_S)
        self.metrics.timeout_s = min(self.metrics.timeout_s, END_SCRAPE_TIMEOUT_S)
        # Both last scrapes at once: against a frozen server, the end waits one deadline, not two.
        gevent.joinall([gevent.spawn(self.stats.stop), gevent.spawn(self.metrics.stop)], raise_error=True)
        directory.write_json("server_stats.json", self.stats.to_json())
        self.stats.close()
        self.metrics.write_csv(directory.path / "server_metrics.csv")
        return {model: delta.to_json() for model, delta in sorted(self.stats.total_delta().items())}

    def replicas(self) -> dict[str, dict]:
        """summary.json's `server_replicas`: {address: {model: breakdown}} when several replicas
        answered (each replica's own statistics; `server` is their sum per model), else {}."""
        deltas = self.stats.replica_deltas()
        if len(deltas) < 2:
            return {}
        return {
            address: {model: delta.to_json() for model, delta in sorted(models.items())}
            for address, models in deltas.items()
        }
