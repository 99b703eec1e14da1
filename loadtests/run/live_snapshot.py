"""The live view of a run on the master (or single process): what the web UI tab and the
Prometheus endpoint show while the test runs, from the same merged numbers the report uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from loadtests.recording.console import interval_cell
from loadtests.recording.histograms import EndpointStats, by_model, merge_stats
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE
from loadtests.triton_stats.statistics import ModelDelta

# The exact latencies the web UI tab shows per endpoint (keys of latency_summary_us()).
TABLE_LATENCIES = ("p50", "p90", "p95", "p99", "max", "mean")
PROTOCOL_ORDER = ("http", "grpc")
# A streamed endpoint's (decoupled model) cells: time to first response and gaps between responses.
STREAM_CELLS = (("ttfr", "first_response_us"), ("gap", "gap_us"))
STREAM_PERCENTILES = ("p50", "p99")  # a model total's name: "identity [http+grpc]"


@dataclass(frozen=True)
class LiveEndpoint:
    name: str
    model: str
    protocol: str
    requests: int
    failures: dict[str, int]
    inferences: int
    window_rps: float
    window_infer_per_s: float
    latency_us: dict[str, float]
    late: int = 0  # open loop: sent more than 1 ms after the intended time
    dropped: int = 0  # open loop: not sent (--drop-when-saturated)
    # Where the true p99 lies at DEFAULT_CONFIDENCE, "lower-upper" ms (loadtests/run_format/confidence.py).
    p99_interval_ms: str = ""
    # A streamed endpoint's ttfr_p50_ms ... gap_p99_ms (stream_cells); {} when it does not stream.
    stream_ms: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, total: EndpointStats, window: EndpointStats | None, window_s: float) -> LiveEndpoint:
        return cls(
            name=total.name,
            model=total.model,
            protocol=total.protocol,
            requests=total.requests,
            failures=dict(total.failures),
            inferences=total.inferences,
            window_rps=(window.requests / window_s) if window else 0.0,
            window_infer_per_s=(window.inferences / window_s) if window else 0.0,
            latency_us=total.latency_summary_us(),
            late=total.late,
            dropped=total.dropped,
            p99_interval_ms=interval_cell(total.latency_ci_us(DEFAULT_CONFIDENCE).get("p99")),
            stream_ms=stream_cells(total),
        )


@dataclass(frozen=True)
class LiveSnapshot:
    """Endpoints (exact, since the test started), the latest server-side interval, users, workers.

    After the test stops, the final numbers of that test (`final` True) until the next one starts.
    """

    endpoints: list[LiveEndpoint] = field(default_factory=list)
    server: dict[str, ModelDelta] = field(default_factory=dict)
    users: int = 0
    workers: int = 0
    run_dir: str = ""
    final: bool = False
    # Each model with several endpoints (HTTP and gRPC), merged: summary.json's model_totals.
    model_totals: list[LiveEndpoint] = field(default_factory=list)
    # Since the test started (final: the test's duration): the run-wide rates' denominator.
    elapsed_s: float = 0.0
    open_loop: bool = False  # Late and Dropped apply (closed loop: empty cells, the tab hides them)
    report: str = ""  # after the test: its report's state or link (run/webui_report.py)

    def table_rows(self) -> list[dict]:
        """One row per endpoint for the web UI tab, each model's endpoints followed by their
        total when it has several; times in ms with microsecond precision."""
        totals = {total.model: total for total in self.model_totals}
        rows = []
        for model in dict.fromkeys(endpoint.model for endpoint in self.endpoints):
            rows += [self._row(endpoint) for endpoint in self.endpoints if endpoint.model == model]
            if model in totals:
                rows.append(self._row(totals[model]))
        return rows

    def _row(self, endpoint: LiveEndpoint) -> dict:
        server = self.server.get(endpoint.model)
        return {
            "endpoint": endpoint.name,
            "requests": endpoint.requests,
            "failures": sum(endpoint.failures.values()),
            "late": endpoint.late if self.open_loop else "",
            "dropped": endpoint.dropped if self.open_loop else "",
            "inferences": endpoint.inferences,
            # The last window while the test runs; after it, only the whole test's rate.
            "infer_now": "" if self.final else round(endpoint.window_infer_per_s, 1),
            "infer_run": round(endpoint.inferences / self.elapsed_s, 1) if self.elapsed_s > 0 else "",
            **{f"{key}_ms": round(endpoint.latency_us[key] / 1000, 3) for key in TABLE_LATENCIES},
            "p99_interval_ms": endpoint.p99_interval_ms,
            **{key: endpoint.stream_ms.get(key, "") for key in STREAM_KEYS},
            "avg_batch": round(server.avg_batch, 2) if server else "",
            "queue_ms": round(server.queue_us / 1000, 3) if server else "",
            "compute_infer_ms": round(server.compute_infer_us / 1000, 3) if server else "",
            "report": self.report,
            "run_dir": self.run_dir + (" (finished)" if self.final else ""),
        }


STREAM_KEYS = tuple(f"{name}_{p}_ms" for name, _ in STREAM_CELLS for p in STREAM_PERCENTILES)


def stream_cells(stats: EndpointStats) -> dict[str, float]:
    """ttfr_p50_ms, ttfr_p99_ms, gap_p50_ms, gap_p99_ms of a streamed endpoint since the test
    started (summary.json's stream numbers, in ms); {} without successful streamed requests."""
    if stats.stream is None or not stats.stream.requests:
        return {}
    summary = stats.stream.summary()
    cells = {}
    for name, key in STREAM_CELLS:
        if summary[key]["max"] > 0:  # a run of single responses has no gaps: empty, not 0 ms
            cells.update({f"{name}_{p}_ms": round(summary[key][p] / 1000, 3) for p in STREAM_PERCENTILES})
    return cells


def model_totals(
    totals: dict[str, EndpointStats], window: dict[str, EndpointStats], window_s: float
) -> list[LiveEndpoint]:
    """Each model with several endpoints, its endpoints merged (totals and the last window), as
    one row named by its protocols: "identity [http+grpc]"."""
    out = []
    for model, merged in by_model(totals).items():
        parts = [stats for stats in totals.values() if stats.model == model]
        in_window = [window[stats.name] for stats in parts if stats.name in window]
        protocols = "+".join(sorted({stats.protocol for stats in parts}, key=_protocol_rank))
        live = LiveEndpoint.of(merged, merge_stats(in_window, model) if in_window else None, window_s)
        out.append(replace(live, name=f"{model} [{protocols}]", protocol=protocols))
    return out


def _protocol_rank(protocol: str) -> int:
    return PROTOCOL_ORDER.index(protocol) if protocol in PROTOCOL_ORDER else len(PROTOCOL_ORDER)
