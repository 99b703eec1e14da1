"""Charts over the run's time: latency, throughput, Triton's server side, resources.

Latencies are drawn in ms, times in seconds from the run start, on one shared TimeAxis.

    png = latency_over_time(timeseries, steps, "users", window_s=1.0)
    figure = latency_over_time_figure(timeseries, time_axis)   # to inspect (tests)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.dataset import whole_windows
from analysis.plots.style import (
    DEVICE_COLOURS,
    LOAD_COLOUR,
    MAX_POINTS,
    MODEL_MARKERS,
    PERCENTILE_COLOURS,
    TIME_FIGURE_WIDTH,
    endpoint_colour,
    endpoint_linestyle,
    headroom,
    png,
    time_layout,
    time_legend,
)
from analysis.plots.timeline import TimeAxis, binned, users_staircase, window_middle


def latency_over_time(
    timeseries: pd.DataFrame, steps: list[dict], steps_kind: str, window_s: float = 1.0, faults: dict | None = None
) -> bytes:
    """One panel per endpoint: p50/p90/p99 per window (and the uncorrected p99 of open-loop runs)."""
    time_axis = TimeAxis.of_run(timeseries, steps, steps_kind, window_s, faults)
    return png(latency_over_time_figure(timeseries, time_axis, window_s))


def latency_over_time_figure(timeseries: pd.DataFrame, time_axis: TimeAxis, window_s: float = 1.0) -> Figure:
    names = sorted(timeseries["endpoint"].unique())
    figure = Figure(figsize=(TIME_FIGURE_WIDTH, 2.2 + 2.6 * len(names)))
    panels = figure.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    time_layout(figure, title_in=0.75)
    bin_s = window_s
    for axes, name in zip(panels, names, strict=True):
        rows = timeseries[(timeseries["endpoint"] == name) & (timeseries["requests"] > timeseries["failures"])]
        rows, bin_s = binned(whole_windows(rows, window_s), window_s)
        for column, label in (("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99")):
            x = window_middle(rows, bin_s)
            axes.plot(x, rows[column] / 1000, label=label, color=PERCENTILE_COLOURS[label], linewidth=1.2)
        if rows["p99_uncorrected_us"].notna().any():
            axes.plot(
                window_middle(rows, bin_s),
                rows["p99_uncorrected_us"] / 1000,
                label="p99 uncorrected",
                color=PERCENTILE_COLOURS["p99"],
                linestyle="--",
                linewidth=1,
            )
        time_axis.apply(axes, label=True)
        axes.set_title(name, fontsize=10, color=endpoint_colour(name))
        axes.set_ylabel("latency (ms)")
        headroom(axes)
        axes.grid(alpha=0.3)
        time_legend(axes)
    panels[-1].set_xlabel("time since start (s)")
    edges = " (the run's partial first and last windows left out)"
    if bin_s == window_s:
        figure.suptitle(f"Latency percentiles per {window_s:g}-s window{edges}")
    else:
        figure.suptitle(f"Latency percentiles: mean of the {window_s:g}-s windows' values per {bin_s:g} s{edges}")
    return figure


def throughput_over_time(
    timeseries: pd.DataFrame, steps: list[dict], steps_kind: str, window_s: float = 1.0, faults: dict | None = None
) -> bytes:
    """Inferences/s per endpoint per window; users (or the open-loop target rate) on the right."""
    time_axis = TimeAxis.of_run(timeseries, steps, steps_kind, window_s, faults)
    return png(throughput_over_time_figure(timeseries, time_axis, window_s))


def throughput_over_time_figure(timeseries: pd.DataFrame, time_axis: TimeAxis, window_s: float = 1.0) -> Figure:
    figure = Figure(figsize=(TIME_FIGURE_WIDTH, 4.5))
    axes = figure.subplots()
    time_layout(figure)
    bin_s = window_s
    for name in sorted(timeseries["endpoint"].unique()):
        rows, bin_s = binned(timeseries[timeseries["endpoint"] == name], window_s)
        axes.plot(
            window_middle(rows, bin_s),
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
    time_legend(right, lines, [line.get_label() for line in lines])
    time_axis.apply(axes, label=True)
    axes.set_title(f"Throughput per {bin_s:g} s")
    return figure


def server_over_time(intervals: list[dict], time_axis: TimeAxis | None = None) -> bytes | None:
    """Triton's average executed batch size and queue time per stats interval, per model."""
    figure = server_over_time_figure(intervals, time_axis)
    return png(figure) if figure is not None else None


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
    figure = Figure(figsize=(TIME_FIGURE_WIDTH, 5.5))
    batch_axes, queue_axes = figure.subplots(2, 1, sharex=True)
    time_layout(figure)
    for index, (model, rows) in enumerate(frame.groupby("model")):
        # A marker per model (colour alone does not tell two pinks apart); on long runs every
        # few intervals, or the markers become a band.
        style = {
            "marker": MODEL_MARKERS[index % len(MODEL_MARKERS)],
            "markevery": max(1, len(rows) // 30),
            "markersize": 4,
            "color": endpoint_colour(str(model)),
        }
        batch_axes.plot(rows["time_s"], rows["avg_batch"], label=model, **style)
        queue_axes.plot(rows["time_s"], rows["queue_us"] / 1000, label=f"{model} queue", **style)
        queue_axes.plot(
            rows["time_s"], rows["compute_infer_us"] / 1000, linestyle="--", label=f"{model} compute infer", **style
        )
    batch_axes.set_ylabel("avg executed batch\n(inferences/execution)")
    headroom(batch_axes)
    queue_axes.set_ylabel("time per request (ms)")
    headroom(queue_axes)
    queue_axes.set_xlabel("time since start (s)")
    for axes in (batch_axes, queue_axes):
        axes.grid(alpha=0.3)
        if time_axis is not None:
            time_axis.apply(axes, label=axes is batch_axes)
        time_legend(axes)
    figure.suptitle("Triton server side per statistics interval (colour and marker: model; dashed: compute infer)")
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
    return png(figure) if figure is not None else None


def resources_over_time_figure(resources: pd.DataFrame, time_axis: TimeAxis | None = None) -> Figure | None:
    panels = [panel for panel in RESOURCE_PANELS if (resources["metric"] == panel[0]).any()]
    if not panels:
        return None
    figure = Figure(figsize=(TIME_FIGURE_WIDTH, 1.5 + 2.2 * len(panels)))
    axes_list = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    time_layout(figure)
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
        time_legend(axes)
    axes_list[-1].set_xlabel("time since start (s)")
    figure.suptitle("Server resources (Triton /metrics)")
    return figure
