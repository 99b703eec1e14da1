"""The streaming section of a report and a comparison (runs with streamed endpoints only).

Reads each endpoint's summary.json `stream` object (a decoupled model's requests, over gRPC or HTTP):
responses per request, time to the first response, gaps between responses, time to the final
response. An endpoint without it has no row, so a run without streamed requests has no section.

    headers, rows = stream_table(load_run("runs/20261126T041200Z-llm"))
"""

from __future__ import annotations

from analysis.document import Document
from analysis.run import SavedRun
from analysis.tables import count, ms

STREAM_HEADERS = [
    "endpoint",
    "requests",
    "responses/request",
    "without response",
    "responses/s",
    "first response p50 (ms)",
    "first response p99 (ms)",
    "gap p50 (ms)",
    "gap p99 (ms)",
    "final p50 (ms)",
    "final p99 (ms)",
]


def stream_table(run: SavedRun, label: str = "") -> tuple[list[str], list[list[str]]]:
    """One row per streamed endpoint (no rows: the run had none); `label` prefixes the endpoint's
    name (a comparison's run label)."""
    rows = []
    for name, endpoint in sorted(run.endpoints.items()):
        stream = endpoint.stream
        if not stream:
            continue
        first, gap, final = stream["first_response_us"], stream["gap_us"], stream["final_response_us"]
        rows.append(
            [
                f"{label}: {name}" if label else name,
                count(stream["requests"]),
                f"{stream['responses_per_request']['mean']:.2f}",
                count(stream["requests_without_response"]),
                f"{stream['responses_per_s']:.1f}",
                ms(first["p50"]),
                ms(first["p99"]),
                ms(gap["p50"]),
                ms(gap["p99"]),
                ms(final["p50"]),
                ms(final["p99"]),
            ]
        )
    return STREAM_HEADERS, rows


STREAM_NOTE = (
    "Streamed requests (a decoupled model: one ModelStreamInfer call each over gRPC, one generate_stream "
    "request over HTTP), successes only: "
    "responses with outputs per request (the empty final response not counted), requests answered by the "
    "final flag alone, the time to the first response, every gap between two responses of a request, and "
    "the time to the final response (the endpoint's latency). Exact HdrHistograms merged over workers."
)


def stream_section(doc: Document, rows: list[list[str]]) -> None:
    """The section itself, for a report (one run) and a comparison (labelled rows); none without rows."""
    doc.noted_table("Streaming", STREAM_NOTE, STREAM_HEADERS, rows)
