"""`python -m analysis report SOURCE`: report.html + report.md + PNGs for one run.

SOURCE is a run directory (the report goes into it) or a perf_analyzer -f CSV (the report
goes next to it, named after it: results.csv -> results.report.html, results.*.png).

    from analysis.report import write_report
    html_path = write_report("runs/20261122T014233Z-demo")
"""

from __future__ import annotations

from pathlib import Path

from analysis import plots, replicas, tables
from analysis.dataset import Dataset, load
from analysis.diagnosis import RULE_TITLES, CannotJudge, Diagnosis, diagnose, headlines
from analysis.document import Document
from analysis.finding_groups import grouped_findings
from analysis.findings import findings
from analysis.mix import mix_table
from analysis.outcome import NO_LIMIT, outcome
from analysis.sequences import sequence_section, sequence_table
from analysis.streams import stream_section, stream_table
from analysis.suggestions import RunCommands
from analysis.tail import tail_section
from analysis.triton_metrics import metrics_section, metrics_table

TITLES = {
    "run": "Load test report",
    "perf_analyzer": "perf_analyzer results",
    "model_analyzer": "Model Analyzer results",
}
LEVEL_SECTION = {
    "concurrency": "Per concurrency level",
    "request_rate": "Per request rate",
    "step": "Per load-shape step",
    "run": "Whole run",
}


def write_report(source: str | Path, out_dir: str | Path | None = None) -> Path:
    """Build the report of a run directory or perf_analyzer CSV; returns report.html's path.
    Raises analysis.dataset.SourceError for input it cannot read."""
    data = load(source)
    if data.kind != "run":
        target = Path(out_dir) if out_dir else data.path.parent
        stem, prefix = f"{data.path.stem}.report", f"{data.path.stem}."
    else:
        target = Path(out_dir) if out_dir else data.path
        stem, prefix = "report", ""
    return build(data, prefix).write(target, stem)


def build(data: Dataset, prefix: str = "") -> Document:
    doc = Document(f"{TITLES[data.kind]}: {data.name}")
    if (line := outcome(data)) is not None:
        doc.outcome(line)
    doc.definitions(tables.header_pairs(data))
    for note in data.notes:
        doc.paragraph(f"Note: {note}")
    headers, rows = tables.model_rows(data)
    if rows:
        doc.heading("Model configuration", 3)
        doc.table(headers, rows)

    _diagnosis_section(doc, data)
    _findings_section(doc, data)

    _mix_section(doc, data)
    _sequence_section(doc, data)
    stream_section(doc, stream_table(data.run)[1] if data.run is not None else [])
    _endpoints_section(doc, data, prefix)
    tail_section(doc, data, prefix)
    metrics_section(doc, *metrics_table(data))
    _levels_section(doc, data, prefix)
    for title, headers, rows in data.tables:
        doc.heading(title, 3)
        doc.table(headers, rows)
    _over_time_section(doc, data, prefix)
    return doc


def _diagnosis_section(doc: Document, data: Dataset) -> None:
    """What limited each model, ranked, each with its evidence, why, and the command to try."""
    if data.kind != "run":
        return
    items = diagnose(data)
    found = [item for item in items if isinstance(item, Diagnosis)]
    unjudged = [item for item in items if isinstance(item, CannotJudge)]
    doc.heading("Diagnosis and next steps")
    doc.bullets(headlines(data))
    if not found:
        doc.paragraph(NO_LIMIT)
    doc.numbered(
        [
            (
                f"{RULE_TITLES[item.rule]}: {item.model}, {item.where}",
                [f"Evidence: {item.evidence}.", f"Why: {item.why}", f"Next: {item.next_step}."],
                item.command,
            )
            for item in found
        ]
    )
    variables = RunCommands.of(data.run.config).header_variables() if data.run is not None else []
    if found and variables:
        doc.paragraph(
            f"The commands read the run's literal --header values from {', '.join(variables)} (never written "
            "here): export them before pasting.",
            True,
        )
    if unjudged:
        reasons = "; ".join(f"{item.rule} for {item.model}: {item.reason}" for item in unjudged)
        doc.paragraph(f"Not judged: {reasons}.", True)


def _findings_section(doc: Document, data: Dataset) -> None:
    """The run as a whole, then (several models) one group per model, the most important first."""
    doc.heading("Findings")
    lines = findings(data)
    if not lines:
        doc.bullets(["Nothing to observe: the source holds no measurements."])
        return
    for group in grouped_findings(data, lines):
        if group.title:
            doc.heading(group.title, 3)
        doc.bullets(group.lines)


def _levels_section(doc: Document, data: Dataset, prefix: str) -> None:
    series = [(name, frame) for name, frame in data.levels.items() if len(frame)]
    if not series:
        return
    doc.heading(LEVEL_SECTION[data.level_kind])
    if data.kind == "model_analyzer":
        doc.paragraph(
            "One table per model configuration (and batch size), latencies as Model Analyzer rounds them.", True
        )
    if data.level_kind == "step":
        doc.paragraph(
            "Steps from steps.json; percentiles merged exactly from the HDR interval logs, server times from "
            "Triton's statistics intervals weighted by their overlap with each step.",
            True,
        )
    for name, frame in series:
        if len(series) > 1 or data.kind == "run":
            doc.heading(name, 3)
        doc.table(*tables.level_table(frame, data.level_kind), compact=tables.LEVEL_COMPACT)
    doc.image(f"{prefix}components.png", plots.components(series, data.level_kind), "Components of Latency")
    knee = data.capacity.get("capacity_rps") if data.capacity else None
    if data.capacity:
        bracket = data.capacity.get("bracket") or {}
        found = f"{knee:g} requests/s" if knee is not None else "none found"
        doc.paragraph(
            f"Capacity under {data.capacity.get('slo')}: {found} (last passing rate "
            f"{bracket.get('last_passing_rps')}, first failing {bracket.get('first_failing_rps')}; "
            f"{data.capacity.get('levels_tried')} levels, in the order tried in capacity.csv). Levels below are "
            "ordered by rate; the star on Latency vs Throughput marks the capacity.",
            True,
        )
    if data.level_kind != "run":
        doc.image(
            f"{prefix}latency_vs_throughput.png",
            plots.latency_vs_throughput(series, data.level_kind, knee),
            "Latency vs Throughput",
        )


def _mix_section(doc: Document, data: Dataset) -> None:
    """A --mix run: each model's weight beside its measured share, and the mix total."""
    headers, rows = mix_table(data.run) if data.run is not None else ([], [])
    if not rows:
        return
    doc.heading("Model mix")
    doc.paragraph(
        f"--mix {data.run.mix.get('given', '')}: each request chose its model by weight (open loop: the rate "
        "split by weight). Requests per model over its endpoints beside Triton's count for it; latencies of "
        "the model's endpoints merged, the total over every endpoint. Triton's breakdown per model is under "
        "Endpoints.",
        True,
    )
    doc.table(headers, rows)


def _sequence_section(doc: Document, data: Dataset) -> None:
    """A run with sequence users: how their sequences ended, per endpoint."""
    sequence_section(doc, sequence_table(data.run)[1] if data.run is not None else [])


def _replicas_section(doc: Document, data: Dataset) -> None:
    """Several Triton replicas: where the requests went, and each replica's own statistics."""
    client = replicas.client_rows(data.run)
    if not client:
        return
    doc.heading("Per replica", 3)
    doc.paragraph(
        "Requests each replica received from the client (the share of the endpoint's requests) and their mean "
        "latency; then each replica's own statistics (the server side above is their sum).",
        True,
    )
    doc.table(replicas.CLIENT_HEADERS, client)
    server = replicas.server_rows(data.run)
    if server:
        doc.table(replicas.SERVER_HEADERS, server)


def _endpoints_section(doc: Document, data: Dataset, prefix: str) -> None:
    """The whole run per endpoint: totals, open-loop lateness, Triton's side, percentile bounds."""
    if not data.endpoints:
        return
    doc.heading("Endpoints")
    doc.paragraph("Whole run, from summary.json. Latencies of successful requests, ms with µs precision.", True)
    doc.table(tables.ENDPOINT_HEADERS, tables.endpoint_rows(data), compact=tables.ENDPOINT_COMPACT)
    if data.open_loop:
        doc.heading("Corrected vs uncorrected latency", 3)
        doc.paragraph(
            "Corrected latency is timed from each request's intended send time, uncorrected from its actual "
            "send; late: sent more than 1 ms after the intended time; dropped: not sent (in-flight limit).",
            True,
        )
        doc.table(tables.OPEN_LOOP_HEADERS, tables.open_loop_rows(data))
    if data.run.server:
        doc.heading("Triton server side", 3)
        doc.paragraph("Deltas of Triton's statistics over the run; times are averages per request.", True)
        if data.run.ensemble_of:
            doc.paragraph(
                "An ensemble's row spans its whole pipeline (its compute includes its steps' queues and "
                "compute: do not add the rows up); each composing model's row is that step alone.",
                True,
            )
        doc.table(tables.SERVER_HEADERS, tables.server_rows(data.run.server, data.run.ensemble_of))
        batches_png = plots.batch_sizes(data.run.server, data.run.requested_batch_sizes())
        if batches_png:
            doc.paragraph(
                "Batch sizes Triton executed (its per-batch-size statistics: what the dynamic batcher formed, "
                "warm-up included if it ran during the run) beside the batch sizes the client requested.",
                True,
            )
            doc.image(f"{prefix}batch_sizes.png", batches_png, "Executed batch sizes vs requested")
    _replicas_section(doc, data)
    if (interval_headers := tables.interval_headers(data)) is not None:
        doc.heading("How sure the percentiles are", 3)
        doc.paragraph(
            "Where each true percentile lies at the stated confidence: distribution-free bounds from order "
            "statistics (binomial ranks, the count MLPerf's early stopping rests on), at HDR bucket edges. "
            "A percentile too few requests can bound says how many it needs.",
            True,
        )
        doc.table(interval_headers, tables.interval_rows(data))


def _over_time_section(doc: Document, data: Dataset, prefix: str) -> None:
    """Latency, throughput, Triton's side and resources over the run, on one time axis."""
    # One x-range, the same step lines and the same outages on every over-time chart.
    faults = data.run.faults if data.run is not None else None
    time_axis = plots.TimeAxis.of_run(data.timeseries, data.steps, data.steps_kind, data.window_s, faults)
    if data.timeseries is not None and len(data.timeseries):
        doc.heading("Over time")
        doc.image(
            f"{prefix}latency_over_time.png",
            plots.latency_over_time(data.timeseries, data.steps, data.steps_kind, data.window_s, faults),
            "Latency percentiles over time",
        )
        doc.image(
            f"{prefix}throughput_over_time.png",
            plots.throughput_over_time(data.timeseries, data.steps, data.steps_kind, data.window_s, faults),
            "Throughput over time",
        )
    server_png = plots.server_over_time(data.server_intervals, time_axis) if data.server_intervals else None
    resources_png = plots.resources_over_time(data.resources, time_axis) if data.resources is not None else None
    if server_png or resources_png:
        doc.heading("Server side over time")
        if server_png:
            doc.image(f"{prefix}server_over_time.png", server_png, "Server batch size and queue time over time")
        if resources_png:
            doc.image(f"{prefix}resources_over_time.png", resources_png, "GPU and CPU over time")
        if data.resources is None or not data.resources["metric"].str.startswith("nv_gpu").any():
            doc.paragraph("No GPU metrics were recorded (Triton ran without a GPU).", True)
