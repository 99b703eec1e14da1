"""Charts per level (a sweep's, a load shape's steps, or the whole run): the Components of
Latency, latency vs throughput, and the executed batch sizes.

    png = components([("identity [grpc]", frame)], "concurrency")
    figure = components_figure([("identity [grpc]", frame)], "concurrency")   # to inspect (tests)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.plots.style import (
    COMPONENTS,
    LEVEL_AXIS,
    LOAD_COLOUR,
    MAX_STEP_LABELS,
    PERCENTILE_COLOURS,
    PERCENTILES,
    endpoint_colour,
    png,
)

REQUESTED_COLOUR = "#9e9e9e"  # the client's mix is grey beside each model's own colour


def batch_sizes(server: dict, requested: dict[str, dict[str, int]]) -> bytes | None:
    """Per model: the share of executions Triton ran at each batch size (summary.json's
    server.<m>.batch_sizes) beside the share of requests the client sent at each size."""
    figure = batch_sizes_figure(server, requested)
    return png(figure) if figure is not None else None


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
        # Below the axes: inside, it covered the tallest bars.
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, borderaxespad=0)
    figure.suptitle("Executed batch sizes (Triton's batch_stats) vs the client's requested mix")
    return figure


# -- per level ----------------------------------------------------------------------------------------------
def components(series: list[tuple[str, pd.DataFrame]], level_kind: str, title: str = "Components of Latency") -> bytes:
    """Stacked mean latency per level, side by side per series (same latency scale), with
    inferences/s as a line on the right axis."""
    return png(components_figure(series, level_kind, title))


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
    return png(latency_vs_throughput_figure(series, level_kind, knee_level))


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
            _label_levels(axes, frame)
        if knee_level is not None:
            _mark_knee(axes, frame, knee_level)
        axes.set_xlabel("throughput (inferences/s)")
        axes.set_ylabel("latency (ms)")
        axes.set_xlim(0, np.nanmax(frame["infer_per_s"]) * 1.1)
        axes.set_ylim(0, np.nanmax(frame["p99_us"]) / 1000 * 1.2)  # room above the highest point's label
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="upper left")
        axes.set_title(name, fontsize=10)
    what = LEVEL_AXIS[level_kind] or "level"
    figure.suptitle(f"Latency vs Throughput (points labelled by {what})")
    return figure


# The lowest share of a chart's height where a label goes above its point, never below.
LOW_SHARE = 0.15


def _label_levels(axes: Axes, frame: pd.DataFrame) -> None:
    """Each level's name by its p99 point, inside the axes: left of points in the right half,
    above and below in turn so neighbours at one latency do not overprint (users by class
    are in the level table)."""
    right = np.nanmax(frame["infer_per_s"]) * 1.1 / 2
    # A label below its point needs room above the x axis (the y axis ends at 1.2 x the top p99).
    low = np.nanmax(frame["p99_us"]) / 1000 * 1.2 * LOW_SHARE
    for index, record in enumerate(frame.to_dict("records")):
        left_of = record["infer_per_s"] > right
        below = index % 2 == 1 and record["p99_us"] / 1000 > low
        axes.annotate(
            str(record["label"]),
            (record["infer_per_s"], record["p99_us"] / 1000),
            xytext=(-6 if left_of else 6, -13 if below else 5),
            textcoords="offset points",
            ha="right" if left_of else "left",
            fontsize=8,
        )


def _mark_knee(axes: Axes, frame: pd.DataFrame, knee_level: float) -> None:
    """The capacity: the last level that met the SLO, a star on its p99 and a dashed line at its throughput."""
    rows = frame[np.isclose(frame["level"].astype(float), knee_level)]
    if rows.empty:
        return
    row = rows.iloc[0]
    label = f"capacity: {knee_level:g} req/s"
    axes.axvline(row["infer_per_s"], color=LOAD_COLOUR, linestyle="--", linewidth=1)
    axes.plot([row["infer_per_s"]], [row["p99_us"] / 1000], marker="*", markersize=16, color=LOAD_COLOUR, label=label)
