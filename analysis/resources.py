"""Findings on the server's own resources: a host or GPU with nothing to spare.

When Triton's host CPU (or a GPU) was busy nearly all the run, every latency in the report
includes waiting for it, and a configuration change that needs more of it (a second model
instance on a 2-core host, say) can only look worse. That is the first thing a reader needs
to know before comparing configurations, and only Triton's metrics show it.
"""

from __future__ import annotations

from analysis.dataset import Dataset

# A resource busy at least this share of the run, on average, gets a line.
BUSY_SHARE_WORTH_NOTING = 0.90
UTILIZATION_METRICS = {"nv_cpu_utilization": "Triton's host CPU", "nv_gpu_utilization": "GPU"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def resource_findings(data: Dataset) -> list[str]:
    """One line per resource busy >= BUSY_SHARE_WORTH_NOTING on average over the run's samples."""
    if data.resources is None:
        return []
    samples = data.resources[data.resources["time_s"] >= 0]
    out = []
    for (metric, device), group in samples.groupby(["metric", "device"], sort=True):
        if metric not in UTILIZATION_METRICS or group.empty:
            continue
        mean, peak = float(group["value"].mean()), float(group["value"].max())
        if mean < BUSY_SHARE_WORTH_NOTING:
            continue
        what = UTILIZATION_METRICS[metric] + ("" if device == "cpu" else f" {device}")
        line = (
            f"{what} was {mean:.0%} busy on average over the run (peak {peak:.0%}; {len(group)} samples of "
            f"Triton's {metric}): a request may have waited for it, and every latency here includes such waits."
        )
        if metric == "nv_cpu_utilization":
            line += _shared_host(data)
        out.append(line)
    return out


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
