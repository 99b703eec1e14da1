"""The over-time charts' shared x-axis: the run's range, its steps and faults, and binning.

Every over-time chart shares one x-range (the run's, TimeAxis) and draws the step boundaries
and the outages; a long run's windows are binned to at most MAX_POINTS per line.

    time_axis = TimeAxis.of_run(timeseries, steps, "users", window_s=1.0)
    time_axis.apply(axes, label=True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis.plots.style import FAULT_COLOUR, MAX_POINTS, MAX_STEP_LABELS, STEP_COLOUR, target_text


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
        mark_steps(axes, list(self.steps), self.steps_kind, label)
        _mark_faults(axes, self.faults or {}, label)


def window_middle(rows: pd.DataFrame, window_s: float) -> pd.Series:
    """Windows are stamped with their start; a point belongs in the middle of its window."""
    return rows["time_s"] + window_s / 2


def binned(rows: pd.DataFrame, window_s: float) -> tuple[pd.DataFrame, float]:
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


def mark_steps(axes: Axes, steps: list[dict], kind: str, label: bool) -> None:
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
    Triton's statistics could not be read, the moment a worker was found lost, and the load
    generator's own stalls."""
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
    for stall in faults.get("load_generator_stalled", []):
        axes.axvspan(stall["from_s"], stall["to_s"], color=FAULT_COLOUR, alpha=0.10, hatch="//", label="_fault")
        if label:
            _fault_text(axes, stall["from_s"], "load generator stalled")


def _fault_text(axes: Axes, x: float, text: str) -> None:
    axes.annotate(
        text, xy=(x, 0.0), xycoords=("data", "axes fraction"), xytext=(3, 4), textcoords="offset points",
        fontsize=8, color=FAULT_COLOUR,
    )  # fmt: skip
