"""Charts that set several runs side by side (`python -m analysis compare`).

png = compare_over_time([("run A", timeseries_a), ("run B", timeseries_b)], "A vs B")
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from analysis.plots.style import PERCENTILES, RUN_LINESTYLES, legend_outside, png
from analysis.plots.timeline import binned, mark_steps, window_middle


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
    return png(figure)


def compare_over_time(series: list[tuple], title: str, window_s: float = 1.0, steps_kind: str = "users") -> bytes:
    """p99 and inferences/s per window, one line per run (time since each run's start)."""
    return png(compare_over_time_figure(series, title, window_s, steps_kind))


def compare_over_time_figure(
    series: list[tuple[str, str, pd.DataFrame, list[dict]]],
    title: str,
    window_s: float = 1.0,
    steps_kind: str = "users",
) -> Figure:
    """`series`: (run label, endpoint, timeseries, steps) per run. A line is named by run and
    endpoint (a run label may equal a model's name), styled per run (not colour alone); the
    first run's load-shape steps are marked."""
    figure = Figure(figsize=(11, 6), layout="constrained")
    latency_axes, throughput_axes = figure.subplots(2, 1, sharex=True)
    for index, (label, name, rows, _) in enumerate(series):
        linestyle = RUN_LINESTYLES[index % len(RUN_LINESTYLES)]
        style = {"label": f"{label}: {name}", "linewidth": 1.2, "linestyle": linestyle}
        ok, bin_s = binned(rows[rows["requests"] > rows["failures"]], window_s)
        latency_axes.plot(window_middle(ok, bin_s), ok["p99_us"] / 1000, **style)
        rows, bin_s = binned(rows, window_s)
        throughput_axes.plot(window_middle(rows, bin_s), rows["throughput_infer_per_s"], **style)
    latency_axes.set_ylabel("p99 latency (ms)")
    throughput_axes.set_ylabel("inferences/s")
    throughput_axes.set_xlabel("time since start (s)")
    steps = series[0][3] if series else []
    for axes in (latency_axes, throughput_axes):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        mark_steps(axes, list(steps), steps_kind, label=axes is latency_axes)
        legend_outside(axes)
    figure.suptitle(title)
    return figure
