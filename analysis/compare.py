"""`python -m analysis compare RUN_A RUN_B [...] --labels A,B`: two or more runs side by side.

Every figure of the report's endpoint table, with its difference and ratio against the
first run (the baseline). Endpoints are matched by (model, protocol) when every run has the
same ones, otherwise by position (bert_qa [http] against bert_qa_dynbatch [http]). Runs
whose traffic differs in kind (closed against open loop, or a different sweep mode) are
refused unless forced: their latencies do not measure the same thing.

    from analysis.compare import write_comparison
    html_path = write_comparison(["runs/a", "runs/b"], ["bert_qa", "dynbatch"], Path("runs/compare-x"))
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from analysis import plots, tables
from analysis.dataset import Dataset, SourceError, load
from analysis.document import Document
from analysis.gate import GateClause, GateResult
from analysis.gate import evaluate as evaluate_gate
from analysis.gate import summary_lines as gate_lines
from analysis.levels import PERCENTILE_KEYS
from analysis.resources import resource_findings
from analysis.sequences import sequence_section, sequence_table
from analysis.series import Series, match, series_of, who
from analysis.streams import stream_section, stream_table
from analysis.verdicts import figure_verdicts, first_screen, level_verdicts

RUNS_ROOT = Path("runs")


class NotComparableError(Exception):
    """Runs whose traffic pattern differs (one line, for the command line)."""


def default_out_dir(now: datetime | None = None) -> Path:
    return RUNS_ROOT / f"compare-{(now or datetime.now(UTC)).strftime('%Y%m%dT%H%M%SZ')}"


def _traffic_family(data: Dataset) -> str:
    return "closed loop" if data.traffic_mode == "closed" else "open loop"


def check_comparable(datasets: list[Dataset], labels: list[str]) -> None:
    """Raise NotComparableError naming the first difference in traffic kind or sweep mode."""
    for what, value in (("traffic", _traffic_family), ("sweep mode", lambda d: d.sweep_mode or "no sweep")):
        values = [value(data) for data in datasets]
        if len(set(values)) > 1:
            found = ", ".join(f"{label}: {v}" for label, v in zip(labels, values, strict=True))
            raise NotComparableError(f"runs are not comparable, {what} differs ({found}); --force compares anyway")


# -- figures -----------------------------------------------------------------------------------------------
def _figures(series: Series) -> list[tuple[str, float, str]]:
    """(figure, value, unit kind) for a series; unit kind picks the format (count, rate, ms, x)."""
    out: list[tuple[str, float, str]] = []
    endpoint = series.endpoint
    if endpoint is not None:
        out += [
            ("requests", endpoint.requests, "count"),
            ("failures", endpoint.failures, "count"),
            ("inferences", endpoint.inferences, "count"),
            ("req/s", endpoint.throughput_rps, "rate"),
            ("infer/s", endpoint.throughput_infer_per_s, "rate"),
        ]
        out += [(f"{key} (ms)", endpoint.latency_us.get(key, math.nan), "ms") for key in PERCENTILE_KEYS]
        if endpoint.bytes_sent_per_request is not None:
            # What one request costs the network: a tensor client against a JPEG client.
            out += [
                ("request bytes/req", endpoint.bytes_sent_per_request, "bytes"),
                ("response bytes/req", endpoint.bytes_received_per_request or 0.0, "bytes"),
            ]
        if endpoint.latency_uncorrected_us:
            out += [
                (f"uncorrected {key} (ms)", endpoint.latency_uncorrected_us.get(key, math.nan), "ms")
                for key in PERCENTILE_KEYS
            ]
        if endpoint.late is not None and endpoint.latency_uncorrected_us:  # closed loop: never late
            out += [("late", endpoint.late, "count"), ("dropped", endpoint.dropped or 0, "count")]
    elif series.levels is not None and len(series.levels):
        # A perf_analyzer or Model Analyzer CSV: its highest level stands for it.
        top = series.levels.iloc[-1]
        out += [("level", top["level"], "x"), ("infer/s", top["infer_per_s"], "rate")]
        out += [(f"{key} (ms)", top[f"{key}_us"], "ms") for key in ("p50", "p90", "p95", "p99")]
    if series.server:
        out += [
            ("server avg batch", series.server.get("avg_batch", math.nan), "x"),
            ("server queue (ms)", series.server.get("queue_us", math.nan), "ms"),
            ("server compute infer (ms)", series.server.get("compute_infer_us", math.nan), "ms"),
        ]
    return out


def _format(value: float, kind: str) -> str:
    if kind == "ms":
        return tables.ms(value)
    if kind == "count":
        return tables.count(value)
    if kind == "bytes":
        return tables.payload_bytes(value)
    return tables.rate(value) if kind == "rate" else tables.number(value, 3)


def _difference(value: float, base: float, kind: str) -> str:
    if any(v is None or math.isnan(v) for v in (value, base)):
        return tables.NOT_MEASURED
    delta = value - base
    if kind == "ms":
        return f"{delta / 1000:+.3f}"
    if kind == "count":  # as the count column itself shows them: no grouping
        return f"{round(delta):+d}"
    if kind == "bytes":
        return f"{round(delta):+,d}"
    return f"{delta:+.3f}"


def _ratio(value: float, base: float) -> str:
    if any(v is None or math.isnan(v) for v in (value, base)) or base == 0:
        return tables.NOT_MEASURED
    return f"{value / base:.3f}x"


def figure_table(group: list[Series]) -> tuple[list[str], list[list[str]]]:
    """Rows: figures; columns: each run, then difference and ratio of each run against the first."""
    base = group[0]
    headers = ["figure", *(s.label for s in group)]
    for other in group[1:]:
        headers += [f"{other.label} - {base.label}", f"{other.label} / {base.label}", f"{other.label} vs {base.label}"]
    per_series = [{name: (value, kind) for name, value, kind in _figures(s)} for s in group]
    verdicts = [figure_verdicts(base, other) for other in group[1:]]
    rows = []
    for name, base_value, kind in _figures(base):
        if not all(name in figures for figures in per_series):
            continue
        row = [name, *(_format(figures[name][0], kind) for figures in per_series)]
        for figures, words in zip(per_series[1:], verdicts, strict=True):
            value = figures[name][0]
            row += [_difference(value, base_value, kind), _ratio(value, base_value), words.get(name, "")]
        rows.append(row)
    return headers, rows


def level_comparison(group: list[Series]) -> tuple[list[str], list[list[str]]]:
    """Levels side by side (matched by position): infer/s and p99 of each run, ratio to the first."""
    frames = [s.levels for s in group]
    count = min(len(frame) for frame in frames)
    base = group[0]
    headers = ["#"]
    for s in group:
        headers += [f"{s.label} level", f"{s.label} infer/s", f"{s.label} p99 (ms)"]
    for s in group[1:]:
        headers += [f"{s.label} / {base.label} infer/s", f"{s.label} / {base.label} p99", f"{s.label} vs {base.label}"]
    verdicts = [level_verdicts(base, other) for other in group[1:]]
    rows = []
    for i in range(count):
        records = [frame.iloc[i] for frame in frames]
        row = [str(i + 1)]
        for record in records:
            row += [str(record["label"]), tables.rate(record["infer_per_s"], 1), tables.ms(record["p99_us"])]
        for record, words in zip(records[1:], verdicts, strict=True):
            _, throughput, p99 = words[i]
            row += [
                _ratio(record["infer_per_s"], records[0]["infer_per_s"]),
                _ratio(record["p99_us"], records[0]["p99_us"]),
                f"throughput {throughput}; p99 {p99}",
            ]
        rows.append(row)
    return headers, rows


def comparison_findings(groups: list[list[Series]]) -> list[str]:
    out = []
    for group in groups:
        base_figures = {name: value for name, value, _ in _figures(group[0])}
        for other in group[1:]:
            figures = {name: value for name, value, _ in _figures(other)}
            words = figure_verdicts(group[0], other)
            parts = []
            for name, word in (("infer/s", "throughput"), ("p50 (ms)", "p50"), ("p99 (ms)", "p99")):
                a, b = base_figures.get(name), figures.get(name)
                if a and b and not math.isnan(a) and not math.isnan(b):
                    shown = (
                        f"{b:,.1f} against {a:,.1f} infer/s"
                        if name == "infer/s"
                        else f"{b / 1000:,.3f} against {a / 1000:,.3f} ms"
                    )
                    parts.append(f"{word} {b / a:.2f}x ({shown}: {words.get(name, 'not judged')})")
            if parts:
                out.append(f"{who(other)} vs {who(group[0])}: " + "; ".join(parts) + ".")
    return out


# -- the document -----------------------------------------------------------------------------------------------
def write_comparison(run_dirs: list[str | Path], labels: list[str], out_dir: str | Path, force: bool = False) -> Path:
    """compare.html, compare.md and the PNGs in out_dir; returns compare.html's path.
    Raises SourceError (unreadable input, wrong label count) or NotComparableError."""
    return compare_and_gate(run_dirs, labels, out_dir, force)[0]


def compare_and_gate(
    run_dirs: list[str | Path], labels: list[str], out_dir: str | Path, force: bool = False,
    gate: list[GateClause] | None = None,
) -> tuple[Path, list[GateResult]]:  # fmt: skip
    """write_comparison, and with `gate` (two runs: baseline, candidate) its verdicts, on the
    first screen too. Raises GateError for a clause that names no endpoint of both runs."""
    if len(run_dirs) < 2:
        raise SourceError("compare needs at least two runs")
    if len(labels) != len(run_dirs) or len(set(labels)) != len(labels):
        raise SourceError(f"--labels needs {len(run_dirs)} distinct names, got {','.join(labels)}")
    datasets = [load(path) for path in run_dirs]
    notes = []
    try:
        check_comparable(datasets, labels)
    except NotComparableError as error:
        if not force:
            raise
        notes.append(f"Compared with --force although {str(error).split(', ', 1)[1].split('; ')[0]}.")
    groups, how = match([series_of(data, label) for data, label in zip(datasets, labels, strict=True)])
    if gate is not None and len(run_dirs) != 2:
        raise SourceError(f"--gate compares a baseline with one candidate, not {len(run_dirs)} runs")
    if gate is not None and any(data.run is None for data in datasets):
        csv = next(str(data.path) for data in datasets if data.run is None)
        raise SourceError(f"--gate judges run directories: {csv} holds no windows to tell noise by")
    results = evaluate_gate(gate, groups) if gate else []
    doc = Document("Comparison: " + " vs ".join(labels))
    if results:
        doc.heading("Gate")
        doc.bullets(gate_lines(results))
    _verdict_section(doc, groups)
    doc.heading("Runs")
    doc.table(["run", "source", "traffic", "models", "batch size", "duration", "levels"], _run_rows(datasets, labels))
    for note in [*notes, how, f"Differences and ratios are against the first run, {labels[0]}."]:
        doc.paragraph(note, note=True)
    doc.heading("Findings")
    # A run on a saturated host explains its differences before any figure does.
    saturated = [
        f"{label}: {line}" for data, label in zip(datasets, labels, strict=True) for line in resource_findings(data)
    ]
    doc.bullets(comparison_findings(groups) + saturated or ["No figure in common to compare."])
    if server_table := server_comparison(datasets, labels):
        doc.heading("Triton server side per model")
        doc.paragraph(
            "Each run's Triton statistics per model, ensembles' composing models included: where the server's "
            "time went (times are averages per request of that model).",
            True,
        )
        doc.table(*server_table)
    _sequence_section(doc, datasets, labels)
    stream_section(doc, _labelled_rows(stream_table, datasets, labels))
    for index, group in enumerate(groups, 1):
        _group_section(doc, index, group, datasets[0])
    return doc.write(Path(out_dir), "compare"), results


def _group_section(doc: Document, index: int, group: list[Series], first: Dataset) -> None:
    """One matched endpoint: its figures, its levels side by side and the charts."""
    doc.heading(" vs ".join(f"{s.label}: {s.name}" for s in group))
    doc.table(*figure_table(group))
    with_levels = [s for s in group if s.levels is not None and len(s.levels)]
    if len(with_levels) == len(group) and max(len(s.levels) for s in group) > 1:
        doc.table(*level_comparison(group))
    level_kind = first.level_kind
    if len(with_levels) == len(group):
        series = [(f"{s.label}: {s.name}", s.levels) for s in group]
        doc.image(f"compare_{index}_components.png", plots.components(series, level_kind), "Components of Latency")
        if max(len(s.levels) for s in group) > 1:
            doc.image(
                f"compare_{index}_latency_vs_throughput.png",
                plots.compare_latency_vs_throughput(series, "Latency vs Throughput"),
                "Latency vs Throughput",
            )
    if all(s.timeseries is not None and len(s.timeseries) for s in group):
        doc.image(
            f"compare_{index}_over_time.png",
            plots.compare_over_time(
                [(s.label, s.name, s.timeseries, s.steps) for s in group],
                "p99 and throughput over time: " + " vs ".join(f"{s.label}: {s.name}" for s in group),
                first.window_s,
                first.steps_kind,
            ),
            "p99 and throughput over time",
        )


def _verdict_section(doc: Document, groups: list[list[Series]]) -> None:
    """The first screen: who wins, by how much, where (analysis.verdicts)."""
    doc.heading("Verdict")
    doc.bullets([line for group in groups for other in group[1:] for line in _first_screen(group[0], other)])
    doc.paragraph(
        "Faster or slower means the two runs' 95 % intervals do not overlap (p99: order statistics of the "
        "latency histogram; throughput: the mean of the full time-series windows); overlapping intervals are "
        "no difference beyond noise. docs/reference/reports.md says how.",
        note=True,
    )


def _first_screen(base: Series, other: Series) -> list[str]:
    figures = [{name: value for name, value, _ in _figures(s)} for s in (base, other)]
    throughput = tuple(f.get("infer/s", math.nan) for f in figures)
    p99 = tuple(f.get("p99 (ms)", math.nan) for f in figures)
    return first_screen(base, other, throughput, p99)


def _sequence_section(doc: Document, datasets: list[Dataset], labels: list[str]) -> None:
    """Runs with sequence users: each run's sequence endpoints, labelled (no section without any)."""
    sequence_section(doc, _labelled_rows(sequence_table, datasets, labels))


def _labelled_rows(table, datasets: list[Dataset], labels: list[str]) -> list[list[str]]:
    """A per-endpoint table's rows (sequences, streams) of every run, each labelled with its run's label."""
    return [row for data, label in zip(datasets, labels, strict=True) if data.run for row in table(data.run, label)[1]]


def server_comparison(datasets: list[Dataset], labels: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """Every run's server breakdown, one row per (run, model); None when no run recorded one."""
    rows = [
        [label, *row]
        for data, label in zip(datasets, labels, strict=True)
        if data.run is not None and data.run.server
        for row in tables.server_rows(data.run.server, data.run.ensemble_of)
    ]
    return (["run", *tables.SERVER_HEADERS], rows) if rows else None


def _run_rows(datasets: list[Dataset], labels: list[str]) -> list[list[str]]:
    rows = []
    for data, label in zip(datasets, labels, strict=True):
        options = data.run.config.get("options", {}) if data.run else {}
        duration = max((e.duration_s for e in data.endpoints), default=math.nan)
        rows.append(
            [
                label,
                str(data.path),
                tables.traffic_text(data) if data.run else f"{data.source_format}, {data.level_kind.replace('_', ' ')}",
                ", ".join(sorted({e.model for e in data.endpoints})) or tables.NOT_MEASURED,
                str(options.get("batch_size") or tables.NOT_MEASURED),
                f"{duration:.1f} s" if not math.isnan(duration) else tables.NOT_MEASURED,
                tables.LEVEL_NAMES.get(data.level_kind, data.level_kind) if data.level_kind != "run" else "whole run",
            ]
        )
    return rows
