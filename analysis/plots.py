"""The report's charts, each returned as PNG bytes.

matplotlib's object API with the Agg canvas, never pyplot: no global figure state, no GUI
backend, nothing to close. Latencies are drawn in ms, times in seconds from the run start.

    png = components([("identity [grpc]", frame)], "concurrency")
    figure = components_figure([("identity [grpc]", frame)], "concurrency")   # to inspect (tests)

One meaning per colour across the report: latency percentiles are shades of blue (darker is
higher), the parts of a request are greens, reds, yellow and greys, endpoints and models
take their colour from ENDPOINT_COLOURS (by name, the same in every chart), and the load
(users, target rate, inferences/s of a level chart) is black. Every over-time chart shares one
x-range (the run's, TimeAxis) and draws the step boundaries.
"""

from __future__ import annotations

import io
import math
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# perf_analyzer's order, bottom to top, and one colour per part in every chart.
COMPONENTS = [
    ("client_network_us", "client send/recv + network", "#9e9e9e"),
    ("client_wait_us", "client wait (open loop: due, not yet sent)", "#5f5f5f"),
    ("queue_us", "server queue", "#d62728"),
    ("compute_input_us", "compute input", "#f2b447"),
    ("compute_infer_us", "compute infer", "#54a24b"),
    ("compute_output_us", "compute output", "#b5cf6b"),
    # Legacy perf_client CSVs: one compute column (input + infer + output).
    ("compute_total_us", "compute (not split)", "#2e6b2a"),
    ("cache_us", "response cache (hit + miss)", "#8c6d31"),
]
PERCENTILES = [("p50_us", "p50"), ("p90_us", "p90"), ("p95_us", "p95"), ("p99_us", "p99")]
# One hue, darker for higher percentiles: a percentile never looks like a part or an endpoint.
PERCENTILE_COLOURS = {"p50": "#9ecae1", "p90": "#4292c6", "p95": "#2171b5", "p99": "#08306b"}
# Endpoints and models (over-time charts): none of them a blue, green, red or grey used above.
ENDPOINT_COLOURS = ("#f58518", "#b279a2", "#8c564b", "#e377c2", "#c51b7d", "#7f3c8d")
# Devices of the resources chart (CPU, each GPU): teals.
DEVICE_COLOURS = ("#01665e", "#35978f", "#80cdc1", "#003c30")
LOAD_COLOUR = "black"
STEP_COLOUR = "#777777"
# Outages on the timeline (restarts, lost workers): a dark crimson no other group uses.
FAULT_COLOUR = "#67001f"
LEVEL_AXIS = {
    "concurrency": "concurrency (requests in flight)",
    "request_rate": "request rate (req/s)",
    "step": "load-shape step",
    "run": "",
}
# More step boundaries than this are drawn as lines without their target written on top.
MAX_STEP_LABELS = 12
DPI = 100
# Beyond this many windows per line (an hour of 1-s windows is 3,600), windows are binned:
# a chart is a few hundred pixels wide, and raw per-second lines become a solid band.
MAX_POINTS = 400


def endpoint_colour(name: str) -> str:
    """The same colour for an endpoint (or a model: its endpoints' name starts with it) in
    every chart of every report: chosen by the model name, not by plotting order."""
    model = name.split(" [")[0]
    return ENDPOINT_COLOURS[zlib.crc32(model.encode()) % len(ENDPOINT_COLOURS)]


def endpoint_linestyle(name: str) -> str:
    """Two endpoints of one model share its colour: gRPC's line is dash-dotted, HTTP's solid."""
    return "-." if name.endswith("[grpc]") else "-"


@dataclass(frozen=True)
class TimeAxis:
    """What every over-time chart shares: the x-range (seconds from the run start) and the
    steps to mark (steps.json: start_s, end_s, target)."""

    start_s: float
    end_s: float
    steps: tuple[dict, ...] = ()
    steps_kind: str = "users"
    # summary.json's "faults": Triton restarts and unreachable spans shaded, lost workers marked.
    faults: dict | None = None

    @classmethod
    def of_run(
        cls,
        timeseries: pd.DataFrame | None,
        steps: list[dict],
        steps_kind: str,
        window_s: float,
        faults: dict | None = None,
    ) -> TimeAxis:
        """The run's time range: from its start (or its first window, which may begin before
        it) to the end of its last window."""
        if timeseries is None or not len(timeseries):
            ends = [float(step["end_s"]) for step in steps] or [1.0]
            return cls(0.0, max(ends), tuple(steps), steps_kind, faults)
        start = min(0.0, float(timeseries["time_s"].min()))
        return cls(start, float(timeseries["time_s"].max()) + window_s, tuple(steps), steps_kind, faults)

    def apply(self, axes: Axes, label: bool) -> None:
        axes.set_xlim(self.start_s, self.end_s)
        _mark_steps(axes, list(self.steps), self.steps_kind, label)
        _mark_faults(axes, self.faults or {}, label)


def target_text(target: float, kind: str) -> str:
    """A step's target: '1 user', '4 users', '100 req/s'."""
    if kind == "rate":
        return f"{target:g} req/s"
    return f"{target:g} user" + ("" if target == 1 else "s")


def _middle(rows: pd.DataFrame, window_s: float) -> pd.Series:
    """Windows are stamped with their start; a point belongs in the middle of its window."""
    return rows["time_s"] + window_s / 2


def _binned(rows: pd.DataFrame, window_s: float) -> tuple[pd.DataFrame, float]:
    """At most MAX_POINTS windows per line: consecutive windows grouped into bins, counts summed
    (throughput stays exact), percentiles averaged over the bin's windows (a smoothing the
    title states). Returns the rows (time_s = bin start) and the bin length in seconds."""
    per_bin = math.ceil(len(rows) / MAX_POINTS)
    if per_bin <= 1:
        return rows, window_s
    bin_s = per_bin * window_s
    keys = (rows["time_s"] // bin_s) * bin_s
    counted = ["requests", "failures", "inferences", *(["covered_s"] if "covered_s" in rows else [])]
    sums = rows.groupby(keys)[counted].sum()
    means = rows.groupby(keys)[[c for c in rows.columns if c.endswith("_us") or c in ("users", "target_rate")]].mean()
    out = sums.join(means).reset_index(names="time_s")
    # Per second the bin's windows covered (the run's first and last windows cover less).
    out["throughput_infer_per_s"] = out["inferences"] / out.get("covered_s", bin_s)
    return out, bin_s


def _legend_outside(axes: Axes, handles=None, labels=None) -> None:
    if handles is None:
        handles, labels = axes.get_legend_handles_labels()
    axes.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)


def users_staircase(timeseries: pd.DataFrame, steps: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(x, users) to draw with `where="post"`. With steps, from steps.json: each change at its
    step's start, on the step lines. timeseries.csv's windows cannot place it: they begin on
    whole Unix seconds (window_key), not on the run's clock, so a change noted in a window was
    drawn at that window's start, up to a window before or after the step line (the 0.3 s seen).
    Without steps the users come from the windows, each held over its window."""
    if steps:
        x = [float(step["start_s"]) for step in steps] + [float(steps[-1]["end_s"])]
        y = [float(step["target"]) for step in steps] + [float(steps[-1]["target"])]
        return np.array(x), np.array(y)
    load = timeseries.drop_duplicates("time_s")
    return load["time_s"].to_numpy(dtype=float), load["users"].to_numpy(dtype=float)


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _mark_steps(axes: Axes, steps: list[dict], kind: str, label: bool) -> None:
    for step in steps:
        axes.axvline(float(step["start_s"]), color=STEP_COLOUR, linestyle=":", linewidth=1, label="_step")
        if label and len(steps) <= MAX_STEP_LABELS:
            axes.annotate(
                target_text(float(step["target"]), kind),
                xy=(float(step["start_s"]), 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, -12),
                textcoords="offset points",
                fontsize=8,
                color="#555555",
            )


def _mark_faults(axes: Axes, faults: dict, label: bool) -> None:
    """Outages on the timeline: a Triton restart between its two snapshots, spans in which
    Triton's statistics could not be read, and the moment a worker was found lost."""
    for restart in faults.get("server_restarts", []):
        axes.axvspan(restart["after_s"], restart["before_s"], color=FAULT_COLOUR, alpha=0.15, label="_fault")
        if label:
            _fault_text(axes, restart["after_s"], "Triton restart")
    for span in faults.get("server_unreachable", []):
        axes.axvspan(span["from_s"], max(span["to_s"], span["from_s"] + 0.5), color="#999999", alpha=0.12, label="_f")
    for lost in faults.get("workers_lost", []):
        axes.axvline(lost["lost_at_s"], color=FAULT_COLOUR, linestyle="--", linewidth=1, label="_fault")
        if label:
            _fault_text(axes, lost["lost_at_s"], f"worker {lost['index']} lost")


def _fault_text(axes: Axes, x: float, text: str) -> None:
    axes.annotate(
        text, xy=(x, 0.0), xycoords=("data", "axes fraction"), xytext=(3, 4), textcoords="offset points",
        fontsize=8, color=FAULT_COLOUR,
    )  # fmt: skip


# -- over time ------------------------------------------------------------------------------------------
def latency_over_time(
    timeseries: pd.DataFrame, steps: list[dict], steps_kind: str, window_s: float = 1.0, faults: dict | None = None
) -> bytes:
    """One panel per endpoint: p50/p90/p99 per window (and the uncorrected p99 of open-loop runs)."""
    time_axis = TimeAxis.of_run(timeseries, steps, steps_kind, window_s, faults)
    return _png(latency_over_time_figure(timeseries, time_axis, window_s))


def latency_over_time_figure(timeseries: pd.DataFrame, time_axis: TimeAxis, window_s: float = 1.0) -> Figure:
    names = sorted(timeseries["endpoint"].unique())
    figure = Figure(figsize=(11, 2.2 + 2.6 * len(names)), layout="constrained")
    panels = figure.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    bin_s = window_s
    for axes, name in zip(panels, names, strict=True):
        rows = timeseries[(timeseries["endpoint"] == name) & (timeseries["requests"] > timeseries["failures"])]
        rows, bin_s = _binned(rows, window_s)
        for column, label in (("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99")):
            x = _middle(rows, bin_s)
            axes.plot(x, rows[column] / 1000, label=label, color=PERCENTILE_COLOURS[label], linewidth=1.2)
        if rows["p99_uncorrected_us"].notna().any():
            axes.plot(
                _middle(rows, bin_s),
                rows["p99_uncorrected_us"] / 1000,
                label="p99 uncorrected",
                color=PERCENTILE_COLOURS["p99"],
                linestyle="--",
                linewidth=1,
            )
        time_axis.apply(axes, label=True)
        axes.set_title(name, fontsize=10, color=endpoint_colour(name))
        axes.set_ylabel("latency (ms)")
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        _legend_outside(axes)
    panels[-1].set_xlabel("time since start (s)")
    if bin_s == window_s:
        figure.suptitle(f"Latency percentiles per {window_s:g}-s window")
    else:
        figure.suptitle(f"Latency percentiles: mean of the {window_s:g}-s windows' values per {bin_s:g} s")
    return figure


def throughput_over_time(
    timeseries: pd.DataFrame, steps: list[dict], steps_kind: str, window_s: float = 1.0, faults: dict | None = None
) -> bytes:
    """Inferences/s per endpoint per window; users (or the open-loop target rate) on the right."""
    time_axis = TimeAxis.of_run(timeseries, steps, steps_kind, window_s, faults)
    return _png(throughput_over_time_figure(timeseries, time_axis, window_s))


def throughput_over_time_figure(timeseries: pd.DataFrame, time_axis: TimeAxis, window_s: float = 1.0) -> Figure:
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    axes = figure.subplots()
    bin_s = window_s
    for name in sorted(timeseries["endpoint"].unique()):
        rows, bin_s = _binned(timeseries[timeseries["endpoint"] == name], window_s)
        axes.plot(
            _middle(rows, bin_s),
            rows["throughput_infer_per_s"],
            label=f"{name} infer/s",
            linewidth=1.3,
            color=endpoint_colour(name),
            linestyle=endpoint_linestyle(name),
        )
    axes.set_xlabel("time since start (s)")
    axes.set_ylabel("inferences/s")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    load = timeseries.drop_duplicates("time_s")
    right = axes.twinx()
    steps = list(time_axis.steps)
    if load["target_rate"].notna().any():
        x, y = (
            users_staircase(timeseries, steps) if steps else (load["time_s"].to_numpy(), load["target_rate"].to_numpy())
        )
        right.step(x, y, where="post", color=LOAD_COLOUR, linestyle="--", label="target rate")
        right.set_ylabel("target rate (req/s)")
    else:
        x, y = users_staircase(timeseries, steps)
        right.step(x, y, where="post", color=LOAD_COLOUR, linestyle="--", label="users (all classes)")
        right.set_ylabel("users (all classes)")
    right.set_ylim(bottom=0, top=max(1.0, float(np.nanmax(right.get_lines()[0].get_ydata()))) * 1.15)
    lines = axes.get_lines() + right.get_lines()
    _legend_outside(right, lines, [line.get_label() for line in lines])
    time_axis.apply(axes, label=True)
    axes.set_title(f"Throughput per {bin_s:g} s")
    return figure


def server_over_time(intervals: list[dict], time_axis: TimeAxis | None = None) -> bytes | None:
    """Triton's average executed batch size and queue time per stats interval, per model."""
    figure = server_over_time_figure(intervals, time_axis)
    return _png(figure) if figure is not None else None


def server_over_time_figure(intervals: list[dict], time_axis: TimeAxis | None = None) -> Figure | None:
    records = [
        {"time_s": (i["start_s"] + i["end_s"]) / 2, "model": model, **entry}
        for i in intervals
        for model, entry in i["models"].items()
        if entry.get("requests")
    ]
    if not records:
        return None
    frame = pd.DataFrame.from_records(records)
    per_bin = math.ceil(frame.groupby("model").size().max() / MAX_POINTS)
    if per_bin > 1:
        # Long runs: intervals combined per bin as the server sums them (times weighted by requests).
        span = (frame["time_s"].max() - frame["time_s"].min()) / MAX_POINTS
        frame["bin"] = (frame["time_s"] // span) * span
        for column in ("queue_us", "compute_infer_us"):
            frame[column] = frame[column] * frame["requests"]
        frame = frame.groupby(["model", "bin"])[
            ["requests", "executions", "inferences", "queue_us", "compute_infer_us"]
        ]
        frame = frame.sum().reset_index().rename(columns={"bin": "time_s"})
        frame["avg_batch"] = frame["inferences"] / frame["executions"]
        for column in ("queue_us", "compute_infer_us"):
            frame[column] = frame[column] / frame["requests"]
    figure = Figure(figsize=(11, 5.5), layout="constrained")
    batch_axes, queue_axes = figure.subplots(2, 1, sharex=True)
    for model, rows in frame.groupby("model"):
        marker = "." if len(rows) <= 60 else None  # dots mark intervals while they can be told apart
        colour = endpoint_colour(str(model))
        batch_axes.plot(rows["time_s"], rows["avg_batch"], marker=marker, label=model, color=colour)
        queue_axes.plot(rows["time_s"], rows["queue_us"] / 1000, marker=marker, label=f"{model} queue", color=colour)
        queue_axes.plot(
            rows["time_s"],
            rows["compute_infer_us"] / 1000,
            marker=marker,
            linestyle="--",
            label=f"{model} compute infer",
            color=colour,
        )
    batch_axes.set_ylabel("avg executed batch\n(inferences/execution)")
    batch_axes.set_ylim(bottom=0)
    queue_axes.set_ylabel("time per request (ms)")
    queue_axes.set_ylim(bottom=0)
    queue_axes.set_xlabel("time since start (s)")
    for axes in (batch_axes, queue_axes):
        axes.grid(alpha=0.3)
        if time_axis is not None:
            time_axis.apply(axes, label=axes is batch_axes)
        _legend_outside(axes)
    figure.suptitle("Triton server side per statistics interval (colour: model; dashed: compute infer)")
    return figure


# -- batcher formation ----------------------------------------------------------------------------------------
REQUESTED_COLOUR = "#9e9e9e"  # the client's mix is grey beside each model's own colour


def batch_sizes(server: dict, requested: dict[str, dict[str, int]]) -> bytes | None:
    """Per model: the share of executions Triton ran at each batch size (summary.json's
    server.<m>.batch_sizes) beside the share of requests the client sent at each size."""
    figure = batch_sizes_figure(server, requested)
    return _png(figure) if figure is not None else None


def batch_sizes_figure(server: dict, requested: dict[str, dict[str, int]]) -> Figure | None:
    models = [model for model in sorted(server) if sum((server[model].get("batch_sizes") or {}).values())]
    if not models:
        return None
    figure = Figure(figsize=(max(8.0, 4.5 * len(models)), 4.5), layout="constrained")
    panels = figure.subplots(1, len(models), squeeze=False)[0]
    for axes, model in zip(panels, models, strict=True):
        executed = {int(size): count for size, count in server[model]["batch_sizes"].items()}
        sent = {int(size): count for size, count in (requested.get(model) or {}).items()}
        # Every size either side used, in order, as categories: batch sizes are few and uneven.
        sizes = sorted(set(executed) | set(sent))
        x = np.arange(len(sizes))
        for offset, counts, label, colour in (
            (-0.2, executed, f"{model} executed", endpoint_colour(model)),
            (0.2, sent, f"{model} requested", REQUESTED_COLOUR),
        ):
            total = sum(counts.values())
            shares = [100.0 * counts.get(size, 0) / total if total else 0.0 for size in sizes]
            axes.bar(x + offset, shares, width=0.4, color=colour, label=label)
        axes.set_xticks(x, [str(size) for size in sizes])
        axes.set_xlim(-0.75, len(sizes) - 0.25)
        axes.set_xlabel("batch size")
        axes.set_ylabel("share (%): of executions / of requests")
        axes.grid(axis="y", alpha=0.3)
        mean = sum(size * count for size, count in executed.items()) / sum(executed.values())
        axes.set_title(f"{model}: {sum(executed.values())} executions, mean batch {mean:.2f}", fontsize=10)
        axes.legend(fontsize=8)
    figure.suptitle("Executed batch sizes (Triton's batch_stats) vs the client's requested mix")
    return figure


RESOURCE_PANELS = [
    ("nv_gpu_utilization", "GPU utilisation (%)", 100.0),
    ("nv_gpu_memory_used_bytes", "GPU memory used (GB)", 1e-9),
    ("nv_gpu_power_usage", "GPU power (W)", 1.0),
    ("nv_cpu_utilization", "CPU utilisation (%)", 100.0),
]


def resources_over_time(resources: pd.DataFrame, time_axis: TimeAxis | None = None) -> bytes | None:
    """GPU utilisation, memory and power (per GPU) and CPU utilisation, as Triton reports them."""
    figure = resources_over_time_figure(resources, time_axis)
    return _png(figure) if figure is not None else None


def resources_over_time_figure(resources: pd.DataFrame, time_axis: TimeAxis | None = None) -> Figure | None:
    panels = [panel for panel in RESOURCE_PANELS if (resources["metric"] == panel[0]).any()]
    if not panels:
        return None
    figure = Figure(figsize=(11, 1.5 + 2.2 * len(panels)), layout="constrained")
    axes_list = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    span = (resources["time_s"].max() - resources["time_s"].min()) / MAX_POINTS
    if resources.groupby(["metric", "device"]).size().max() > MAX_POINTS and span > 0:
        # Long runs: samples averaged per bin, or a run of an hour draws a solid band.
        resources = resources.assign(time_s=(resources["time_s"] // span) * span)
        resources = resources.groupby(["metric", "device", "time_s"], as_index=False)["value"].mean()
    for axes, (metric, label, scale) in zip(axes_list, panels, strict=True):
        devices = sorted(resources["device"].unique())
        for device, rows in resources[resources["metric"] == metric].groupby("device"):
            colour = DEVICE_COLOURS[devices.index(device) % len(DEVICE_COLOURS)]
            axes.plot(rows["time_s"], rows["value"] * scale, label=device, linewidth=1.2, color=colour)
        axes.set_ylabel(label)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        if time_axis is not None:
            time_axis.apply(axes, label=axes is axes_list[0])
        _legend_outside(axes)
    axes_list[-1].set_xlabel("time since start (s)")
    figure.suptitle("Server resources (Triton /metrics)")
    return figure


# -- per level ----------------------------------------------------------------------------------------------
def components(series: list[tuple[str, pd.DataFrame]], level_kind: str, title: str = "Components of Latency") -> bytes:
    """Stacked mean latency per level, side by side per series (same latency scale), with
    inferences/s as a line on the right axis."""
    return _png(components_figure(series, level_kind, title))


def components_figure(
    series: list[tuple[str, pd.DataFrame]], level_kind: str, title: str = "Components of Latency"
) -> Figure:
    width = min(18.0, 3.0 + sum(max(2.2, 0.9 * len(frame)) for _, frame in series))
    figure = Figure(figsize=(max(8.0, width), 5.0), layout="constrained")
    panels = figure.subplots(1, len(series), sharey=True, squeeze=False)[0]
    rights = []
    for axes, (name, frame) in zip(panels, series, strict=True):
        x = np.arange(len(frame))
        bottom = np.zeros(len(frame))
        for column, label, colour in COMPONENTS:
            values = frame[column].to_numpy(dtype=float) / 1000
            if np.isnan(values).all():
                continue  # not measured by this source (e.g. a perf_analyzer CSV without the split)
            values = np.nan_to_num(values)
            axes.bar(x, values, bottom=bottom, color=colour, label=label, width=0.6)
            bottom += values
        labels = [str(label) for label in frame["label"]]
        # Rotate only labels that would overlap: ~0.075 in per character at 9 pt, in a panel
        # as wide as the figure gives each series (below).
        crowded = 0.075 * sum(len(label) for label in labels) > 0.85 * max(2.2, 0.9 * len(frame))
        axes.set_xticks(x, labels, rotation=25 if crowded else 0, ha="right" if crowded else "center", fontsize=9)
        axes.set_xlim(-0.75, len(frame) - 0.25)  # a lone bar stays bar-shaped
        axes.set_xlabel(LEVEL_AXIS[level_kind])
        axes.set_title(name, fontsize=10)
        axes.grid(axis="y", alpha=0.3)
        right = axes.twinx()
        right.plot(x, frame["infer_per_s"], color=LOAD_COLOUR, marker="o", label="inferences/s")
        # Every panel's throughput axis is labelled: a reader looks at one panel at a time.
        right.set_ylabel("throughput (inferences/s)")
        rights.append(right)
    panels[0].set_ylabel("mean latency (ms)")
    top = max((np.nanmax(r.get_lines()[0].get_ydata()) for r in rights), default=1.0)
    for right in rights:
        right.set_ylim(0, (top if top > 0 and not math.isnan(top) else 1.0) * 1.2)
    handles, labels = panels[0].get_legend_handles_labels()
    line = rights[0].get_lines()[0]
    figure.legend(handles[::-1] + [line], labels[::-1] + ["inferences/s"], loc="outside right upper", fontsize=8)
    figure.suptitle(title)
    return figure


def latency_vs_throughput(
    series: list[tuple[str, pd.DataFrame]], level_kind: str, knee_level: float | None = None
) -> bytes:
    """p50/p90/p95/p99 against inferences/s, one panel per series, each point labelled with its level;
    `knee_level` (a capacity search's last passing rate) is marked as the knee."""
    return _png(latency_vs_throughput_figure(series, level_kind, knee_level))


def latency_vs_throughput_figure(
    series: list[tuple[str, pd.DataFrame]], level_kind: str, knee_level: float | None = None
) -> Figure:
    figure = Figure(figsize=(max(7.0, 5.5 * len(series)), 4.8), layout="constrained")
    panels = figure.subplots(1, len(series), squeeze=False)[0]
    for axes, (name, frame) in zip(panels, series, strict=True):
        for column, label in PERCENTILES:
            axes.plot(
                frame["infer_per_s"], frame[column] / 1000, marker="o", label=label, color=PERCENTILE_COLOURS[label]
            )
        if len(frame) <= MAX_STEP_LABELS:
            for record in frame.to_dict("records"):
                by_class = record.get("users_by_class")
                several = isinstance(by_class, str) and "," in by_class  # users from more than one class
                axes.annotate(
                    f"{record['label']}\n({by_class})" if several else record["label"],
                    (record["infer_per_s"], record["p99_us"] / 1000),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=8,
                )
        if knee_level is not None:
            _mark_knee(axes, frame, knee_level)
        axes.set_xlabel("throughput (inferences/s)")
        axes.set_ylabel("latency (ms)")
        axes.set_xlim(0, np.nanmax(frame["infer_per_s"]) * 1.2)  # room for the last point's label
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="upper left")
        axes.set_title(name, fontsize=10)
    what = LEVEL_AXIS[level_kind] or "level"
    figure.suptitle(f"Latency vs Throughput (points labelled by {what})")
    return figure


def _mark_knee(axes: Axes, frame: pd.DataFrame, knee_level: float) -> None:
    """The capacity: the last level that met the SLO, a star on its p99 and a dashed line at its throughput."""
    rows = frame[np.isclose(frame["level"].astype(float), knee_level)]
    if rows.empty:
        return
    row = rows.iloc[0]
    label = f"capacity: {knee_level:g} req/s"
    axes.axvline(row["infer_per_s"], color=LOAD_COLOUR, linestyle="--", linewidth=1)
    axes.plot([row["infer_per_s"]], [row["p99_us"] / 1000], marker="*", markersize=16, color=LOAD_COLOUR, label=label)


# -- comparisons ---------------------------------------------------------------------------------------------
def compare_latency_vs_throughput(series: list[tuple[str, pd.DataFrame]], title: str) -> bytes:
    """One panel per percentile, one line per run."""
    figure = Figure(figsize=(11, 7.5), layout="constrained")
    panels = figure.subplots(2, 2).ravel()
    for axes, (column, label) in zip(panels, PERCENTILES, strict=True):
        for name, frame in series:
            axes.plot(frame["infer_per_s"], frame[column] / 1000, marker="o", label=name)
        axes.set_title(label, fontsize=10)
        axes.set_xlabel("throughput (inferences/s)")
        axes.set_ylabel(f"{label} latency (ms)")
        axes.set_xlim(left=0)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(title)
    return _png(figure)


def compare_over_time(series: list[tuple[str, pd.DataFrame]], title: str, window_s: float = 1.0) -> bytes:
    """p99 and inferences/s per window, one line per run (time since each run's start)."""
    figure = Figure(figsize=(11, 6), layout="constrained")
    latency_axes, throughput_axes = figure.subplots(2, 1, sharex=True)
    for name, rows in series:
        ok, bin_s = _binned(rows[rows["requests"] > rows["failures"]], window_s)
        latency_axes.plot(_middle(ok, bin_s), ok["p99_us"] / 1000, label=name, linewidth=1.2)
        rows, bin_s = _binned(rows, window_s)
        throughput_axes.plot(_middle(rows, bin_s), rows["throughput_infer_per_s"], label=name, linewidth=1.2)
    latency_axes.set_ylabel("p99 latency (ms)")
    throughput_axes.set_ylabel("inferences/s")
    throughput_axes.set_xlabel("time since start (s)")
    for axes in (latency_axes, throughput_axes):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        _legend_outside(axes)
    figure.suptitle(title)
    return _png(figure)
