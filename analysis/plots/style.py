"""The charts' shared look: one meaning per colour, the PNG canvas, the legend's place.

One meaning per colour across the report: latency percentiles are shades of blue (darker is
higher), the parts of a request are greens, reds, yellow and greys, endpoints and models
take their colour from ENDPOINT_COLOURS (by name, the same in every chart), and the load
(users, target rate, inferences/s of a level chart) is black.

    endpoint_colour("bert_qa [grpc]")   # the model's colour, in every chart of every report
"""

from __future__ import annotations

import io
import textwrap
import zlib

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.levels import SEND_RECV_NETWORK, STREAMING_REST

# perf_analyzer's order, bottom to top, and one colour per part in every chart.
COMPONENTS = [
    ("client_network_us", SEND_RECV_NETWORK, "#9e9e9e"),
    ("streaming_us", STREAMING_REST, "#c7c7c7"),
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
# Models of one chart told apart by marker too, not by colour alone (in plotting order).
MODEL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# Runs of a comparison chart: one line style each, not colour alone.
RUN_LINESTYLES = ("-", "--", ":", "-.")
# Every over-time chart puts its time axis at the same place of an 11-in wide figure, so the
# charts stacked in a report line up: axes from TIME_LEFT to TIME_RIGHT (figure fraction), a
# right-hand axis (users, target rate) in the next TIME_RIGHT_AXIS, the legend after it.
TIME_FIGURE_WIDTH = 11.0
TIME_LEFT, TIME_RIGHT, TIME_RIGHT_AXIS = 0.07, 0.73, 0.085
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


def target_text(target: float, kind: str) -> str:
    """A step's target: '1 user', '4 users', '100 req/s'."""
    if kind == "rate":
        return f"{target:g} req/s"
    return f"{target:g} user" + ("" if target == 1 else "s")


# A legend entry longer than this is wrapped: the legend's column right of an over-time chart is
# about 2 in wide, where "bert_qa_dynbatch compute infer" was cut at the image's edge.
LEGEND_WRAP = 24


def wrapped(labels) -> list[str]:
    """Legend labels wrapped at LEGEND_WRAP characters (on spaces, else within a long name).

    >>> wrapped(["bert_qa_dynbatch [http] infer/s", "p99"])
    ['bert_qa_dynbatch [http]\ninfer/s', 'p99']
    """
    return [textwrap.fill(str(label), LEGEND_WRAP, break_on_hyphens=False) for label in labels]


def headroom(axes: Axes, share: float = 0.12) -> None:
    """The y axis from 0 to `share` above its highest line, so no line runs along the frame."""
    tops = [np.nanmax(np.asarray(line.get_ydata(), dtype=float)) for line in axes.get_lines() if len(line.get_ydata())]
    tops = [top for top in tops if np.isfinite(top)]
    if tops and max(tops) > 0:
        axes.set_ylim(0, max(tops) * (1 + share))


def legend_outside(axes: Axes, handles=None, labels=None) -> None:
    """The legend right of the axes, where it hides no data."""
    if handles is None:
        handles, labels = axes.get_legend_handles_labels()
    axes.legend(handles, wrapped(labels), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)


def time_layout(figure: Figure, title_in: float = 0.55) -> None:
    """Fixed margins for an over-time figure (see TIME_LEFT): not the constrained layout,
    which sizes the axes by the legend's width and so differs from chart to chart."""
    height = figure.get_figheight()
    figure.subplots_adjust(
        left=TIME_LEFT, right=TIME_RIGHT, top=1 - title_in / height, bottom=0.6 / height, hspace=0.45
    )


def time_legend(axes: Axes, handles=None, labels=None) -> None:
    """An over-time chart's legend, right of the right-hand axis (time_layout), level with the axes' top."""
    if handles is None:
        handles, labels = axes.get_legend_handles_labels()
    top = axes.get_position().y1
    axes.legend(
        handles,
        wrapped(labels),
        loc="upper left",
        bbox_to_anchor=(TIME_RIGHT + TIME_RIGHT_AXIS, top),
        bbox_transform=axes.figure.transFigure,
        fontsize=8,
        borderaxespad=0,
    )


def png(figure: Figure) -> bytes:
    """The figure drawn on the Agg canvas (no pyplot, no GUI backend), as PNG bytes."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()
