"""A comparison's unit: one endpoint of one run, and how endpoints are matched across runs.

groups, how = match([series_of(data, label) for data, label in zip(datasets, labels)])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.dataset import Dataset
from loadtests.run_format.files import HDR_DIR


@dataclass(frozen=True)
class Series:
    """One endpoint of one run (or a perf_analyzer CSV's single series)."""

    label: str
    name: str
    endpoint: object | None  # analysis.run.EndpointSummary
    levels: pd.DataFrame | None
    timeseries: pd.DataFrame | None
    server: dict | None
    steps: list[dict] = field(default_factory=list)
    window_s: float = 1.0
    hdr_dir: Path | None = None  # the run's HDR interval logs (analysis/gate.py resamples their windows)
    start_epoch: float = 0.0  # the run clock's zero (timeseries.csv's time_s), Unix seconds


def series_of(data: Dataset, label: str) -> list[Series]:
    if data.run is None:
        frame = next(iter(data.levels.values()))
        return [Series(label, data.name, None, frame, None, None)]
    out = []
    single = next(iter(data.levels.values())) if len(data.levels) == 1 else None
    steps = data.steps if data.level_kind == "step" else []
    for endpoint in data.endpoints:
        timeseries = None
        if data.timeseries is not None:
            timeseries = data.timeseries[data.timeseries["endpoint"] == endpoint.name]
        frame = data.levels.get(endpoint.name, single)
        server = data.run.server.get(endpoint.model)
        out.append(
            Series(
                label, endpoint.name, endpoint, frame, timeseries, server, steps, data.window_s,
                data.path / HDR_DIR, data.start_epoch,
            )
        )  # fmt: skip
    return out


def match(all_series: list[list[Series]]) -> tuple[list[list[Series]], str]:
    """Groups of one series per run, and how they were matched."""
    keys = [[_key(s) for s in series] for series in all_series]
    if all(set(k) == set(keys[0]) for k in keys) and all(None not in k for k in keys):
        groups = [[next(s for s in series if _key(s) == key) for series in all_series] for key in keys[0]]
        return groups, "Endpoints matched by model and protocol."
    count = min(len(series) for series in all_series)
    groups = [[series[i] for series in all_series] for i in range(count)]
    return groups, "Endpoints matched by position (the runs test different models or protocols)."


def _key(series: Series) -> tuple[str, str] | None:
    return (series.endpoint.model, series.endpoint.protocol) if series.endpoint is not None else None


def who(side: Series) -> str:
    """An endpoint of a run, named once: 'bert_qa [http]' when the label is the model, else 'label: endpoint'."""
    return side.name if side.name.split(" [")[0] == side.label else f"{side.label}: {side.name}"
