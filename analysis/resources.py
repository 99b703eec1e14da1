"""Findings on the server's own resources: a host or GPU with nothing to spare.

When Triton's host CPU (or a GPU) was busy nearly all the time, every latency measured then
includes waiting for it, and a configuration change that needs more of it (a second model
instance on a 2-core host, say) can only look worse. That is the first thing a reader needs
to know before comparing configurations, and only Triton's metrics show it.

It is judged per load step as well as over the whole run: a run whose last steps saturate the
host and whose first ones idle averages below the threshold, and the step is what matters.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.dataset import Dataset
from analysis.levels import step_label

# A resource busy at least this share of the run (or of a step), on average, gets a line.
BUSY_SHARE_WORTH_NOTING = 0.90
UTILIZATION_METRICS = {"nv_cpu_utilization": "Triton's host CPU", "nv_gpu_utilization": "GPU"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
WAITS = "a request may have waited for it, and every latency {} includes such waits."


def resource_findings(data: Dataset) -> list[str]:
    """One line per resource busy >= BUSY_SHARE_WORTH_NOTING on average over the run's samples,
    or, when the whole run is below that, over the samples of one or more load steps."""
    if data.resources is None:
        return []
    samples = data.resources[data.resources["time_s"] >= 0]
    out = []
    for (metric, device), group in samples.groupby(["metric", "device"], sort=True):
        if metric not in UTILIZATION_METRICS or group.empty:
            continue
        what = UTILIZATION_METRICS[metric] + ("" if device == "cpu" else f" {device}")
        line = _whole_run(what, metric, group) or _busy_steps(what, metric, group, data)
        if not line:
            continue
        if metric == "nv_cpu_utilization":
            line += _shared_host(data)
        out.append(line)
    return out


def _whole_run(what: str, metric: str, group: pd.DataFrame) -> str:
    mean, peak = float(group["value"].mean()), float(group["value"].max())
    if mean < BUSY_SHARE_WORTH_NOTING:
        return ""
    return (
        f"{what} was {mean:.0%} busy on average over the run (peak {peak:.0%}; {len(group)} samples of "
        f"Triton's {metric}): " + WAITS.format("here")
    )


def busy_steps(group: pd.DataFrame, steps: list[dict], kind: str) -> list[tuple[str, float, float, int]]:
    """(step label, mean, peak, samples) of each step whose samples average >= the threshold."""
    out = []
    for step in steps:
        start, end = float(step["start_s"]), float(step["end_s"])
        values = group[(group["time_s"] >= start) & (group["time_s"] < end)]["value"]
        if values.empty or float(values.mean()) < BUSY_SHARE_WORTH_NOTING:
            continue
        out.append((step_label(step, kind), float(values.mean()), float(values.max()), len(values)))
    return out


def _busy_steps(what: str, metric: str, group: pd.DataFrame, data: Dataset) -> str:
    busy = busy_steps(group, data.steps, data.steps_kind)
    if not busy:
        return ""
    parts = [f"{mean:.0%} busy at {label} (peak {peak:.0%}, {n} samples)" for label, mean, peak, n in busy]
    whole = float(group["value"].mean())
    where = "at that load" if len(busy) == 1 else "at those loads"
    return (
        f"{what} was saturated in {len(busy)} of {len(data.steps)} load steps: {'; '.join(parts)}, from "
        f"Triton's {metric} ({_percent(whole)} over the whole run, an average that hides it): " + WAITS.format(where)
    )


def _percent(share: float) -> str:
    return "not measured" if math.isnan(share) else f"{share:.0%}"


def _shared_host(data: Dataset) -> str:
    """The load generator on Triton's host (a loopback address) takes CPU from the same cores."""
    triton = (data.run.config.get("triton") or {}) if data.run is not None else {}
    addresses = [str(triton.get(key) or "") for key in ("http", "grpc")]
    local = [address for address in addresses if address and address.rsplit(":", 1)[0] in LOOPBACK_HOSTS]
    if not local:
        return ""
    cpu_s = (data.run.load_generator or {}).get("cpu_s")
    spent = f" and used {cpu_s:,.3f} s of CPU there" if cpu_s else ""
    return f" The load generator ran on the same host (Triton at {local[0]}){spent}."
