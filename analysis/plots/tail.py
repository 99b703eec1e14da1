"""What made the slow requests slow (--trace-sample): the parts of the median request and of the tail.

png = tail_parts(block)                     # summary.json traces.endpoints[<name>]
png = latency_vs_queue(frame, "identity [http]")   # traces.csv rows of one endpoint
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.plots.style import endpoint_colour, png
from loadtests.run_format.attribution import PART_LABELS, PARTS

# The server's steps in the components chart's colours; Triton's own receive/send and the
# network + client in greys (what happens outside the model).
PART_COLOURS = {
    "receive": "#c7c7c7",
    "queue": "#d62728",
    "compute_input": "#f2b447",
    "infer": "#54a24b",
    "output": "#b5cf6b",
    "send": "#8c8c8c",
    "network_client": "#5f5f5f",
}
BAND_LABELS = {"median": "median request\n(p40-p60)", "above_p95": "above p95", "above_p99": "above p99"}


def tail_parts(name: str, block: dict) -> bytes:
    return png(tail_parts_figure(name, block))


def tail_parts_figure(name: str, block: dict) -> Figure:
    """One stacked bar per band: each part's share of the band's time, its mean in the label."""
    bands = [band for band in ("median", "above_p95", "above_p99") if band in block["bands"]]
    figure = Figure(figsize=(8.0, 4.5), layout="constrained")
    axes = figure.subplots()
    x = np.arange(len(bands))
    bottom = np.zeros(len(bands))
    for part in PARTS:
        shares = np.array([100.0 * block["bands"][band]["share"][part] for band in bands])
        axes.bar(x, shares, bottom=bottom, color=PART_COLOURS[part], label=PART_LABELS[part], width=0.6)
        bottom += shares
    labels = [
        f"{BAND_LABELS[band]}\n{block['bands'][band]['requests']} requests, "
        f"mean {block['bands'][band]['mean_us'] / 1000:.2f} ms"
        if block["bands"][band]["requests"]
        else f"{BAND_LABELS[band]}\nno request"
        for band in bands
    ]
    axes.set_xticks(x, labels, fontsize=8)
    axes.set_ylabel("share of the band's time (%)")
    axes.set_ylim(0, 100)
    axes.set_title(f"{name}: where the time went, by latency band", fontsize=10)
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), borderaxespad=0)
    return figure


def latency_vs_queue(frame: pd.DataFrame, name: str, p99_us: float | None = None) -> bytes:
    return png(latency_vs_queue_figure(frame, name, p99_us))


def latency_vs_queue_figure(frame: pd.DataFrame, name: str, p99_us: float | None = None) -> Figure:
    """Each traced request: its client total against its time in Triton's queue (ms)."""
    figure = Figure(figsize=(8.0, 4.5), layout="constrained")
    axes = figure.subplots()
    axes.scatter(frame["queue_us"] / 1000, frame["client_us"] / 1000, s=6, alpha=0.5, color=endpoint_colour(name))
    if p99_us is not None:
        axes.axhline(p99_us / 1000, color="#333333", linestyle="--", linewidth=0.8, label="p99 of the traced requests")
        axes.legend(fontsize=8, loc="upper left")
    axes.set_xlabel("time in Triton's queue (ms)")
    axes.set_ylabel("client latency (ms)")
    axes.grid(alpha=0.3)
    axes.set_title(f"{name}: {len(frame)} traced requests, latency against queue time", fontsize=10)
    return figure
