"""The report's charts, each returned as PNG bytes (or as a Figure, to inspect in tests).

matplotlib's object API with the Agg canvas, never pyplot: no global figure state, no GUI
backend, nothing to close. Latencies are drawn in ms, times in seconds from the run start.

    style.py        colours (one meaning each), the PNG canvas, the legend's place
    timeline.py     TimeAxis: the run's x-range, its steps and faults; binning long runs
    over_time.py    latency, throughput, server side and resources over the run
    per_level.py    Components of Latency, latency vs throughput, executed batch sizes
    comparisons.py  several runs side by side
    tail.py         what made the slow requests slow (--trace-sample): the parts of the tail

    png = plots.components([("identity [grpc]", frame)], "concurrency")
"""

from analysis.plots.comparisons import compare_latency_vs_throughput, compare_over_time, compare_over_time_figure
from analysis.plots.over_time import (
    RESOURCE_PANELS,
    latency_over_time,
    latency_over_time_figure,
    resources_over_time,
    resources_over_time_figure,
    server_over_time,
    server_over_time_figure,
    throughput_over_time,
    throughput_over_time_figure,
)
from analysis.plots.per_level import (
    batch_sizes,
    batch_sizes_figure,
    components,
    components_figure,
    latency_vs_throughput,
    latency_vs_throughput_figure,
)
from analysis.plots.style import (
    COMPONENTS,
    DEVICE_COLOURS,
    ENDPOINT_COLOURS,
    LOAD_COLOUR,
    PERCENTILE_COLOURS,
    PERCENTILES,
    endpoint_colour,
    endpoint_linestyle,
)
from analysis.plots.timeline import TimeAxis, users_staircase

__all__ = [
    "COMPONENTS",
    "DEVICE_COLOURS",
    "ENDPOINT_COLOURS",
    "LOAD_COLOUR",
    "PERCENTILES",
    "PERCENTILE_COLOURS",
    "RESOURCE_PANELS",
    "TimeAxis",
    "batch_sizes",
    "batch_sizes_figure",
    "compare_latency_vs_throughput",
    "compare_over_time",
    "compare_over_time_figure",
    "components",
    "components_figure",
    "endpoint_colour",
    "endpoint_linestyle",
    "latency_over_time",
    "latency_over_time_figure",
    "latency_vs_throughput",
    "latency_vs_throughput_figure",
    "resources_over_time",
    "resources_over_time_figure",
    "server_over_time",
    "server_over_time_figure",
    "throughput_over_time",
    "throughput_over_time_figure",
    "users_staircase",
]
