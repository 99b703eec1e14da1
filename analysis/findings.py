"""Findings: short observations computed from the data, each with the numbers behind it.

They state what the numbers show ("queue time is 70 % of the mean latency at concurrency
8"), not advice; thresholds below only decide which observations are worth a line.
"""

from __future__ import annotations

import itertools
import math

import pandas as pd

from analysis.dataset import PARTIAL_WINDOW, Dataset
from analysis.levels import SEND_RECV_NETWORK
from analysis.replicas import imbalance_findings
from analysis.resources import resource_findings
from loadtests.run_format.faults import fault_sentences
from loadtests.run_format.summary import late_ratio

# Throughput counts as still growing while a higher level adds more than this share.
GROWTH_THRESHOLD = 0.10
# A queue share below this is not worth mentioning.
QUEUE_SHARE_WORTH_NOTING = 0.20
LEVEL_WORDS = {"concurrency": "concurrency", "request_rate": "request rate", "step": "", "run": ""}


def _ms(us: float) -> str:
    return f"{us / 1000:,.3f} ms"


def _at(record: dict, level_kind: str) -> str:
    if level_kind == "run":
        return "over the whole run"
    if level_kind == "step":
        return f"at {record['label']}"
    return f"at {LEVEL_WORDS[level_kind]} {record['label']}"


def findings(data: Dataset) -> list[str]:
    out: list[str] = []
    out += _faults(data)
    out += _failures(data)
    out += resource_findings(data)  # a saturated host colours every number below
    out += _open_loop(data)
    out += _tails(data)
    out += _edge_maxima(data)
    out += _during_stop(data)
    out += imbalance_findings(data.run)
    for name, frame in data.levels.items():
        prefix = f"{name}: " if len(data.levels) > 1 else ""
        out += [prefix + line for line in _composition(frame, data.level_kind)]
        out += [prefix + line for line in _saturation(frame, data.level_kind)]
    out += _batching(data)
    out += _load_generator(data)
    return out


def _faults(data: Dataset) -> list[str]:
    """Outages first: every other number of the run is read in their light."""
    return fault_sentences(data.run.faults if data.run is not None else {})


def _failures(data: Dataset) -> list[str]:
    out = []
    total = sum(endpoint.requests for endpoint in data.endpoints)
    for endpoint in data.endpoints:
        if endpoint.failures:
            share = endpoint.failures / endpoint.requests if endpoint.requests else math.nan
            classes = ", ".join(f"{name} {n:,}" for name, n in sorted(endpoint.failures_by_class.items()))
            out.append(
                f"{endpoint.name}: {endpoint.failures:,} of {endpoint.requests:,} requests failed ({share:.2%})"
                + (f": {classes}." if classes else ".")
            )
    if data.endpoints and not out:
        out.append(f"No request failed ({total:,} requests).")
    return out


def _tails(data: Dataset) -> list[str]:
    out = []
    for endpoint in data.endpoints:
        p50, p99 = endpoint.latency_us.get("p50", 0.0), endpoint.latency_us.get("p99", 0.0)
        if p50 > 0:
            out.append(f"{endpoint.name}: p99 is {p99 / p50:.1f}x p50 ({_ms(p99)} against {_ms(p50)}).")
    return out


def _edge_maxima(data: Dataset) -> list[str]:
    """A max latency that came in the run's partial first or last window: as the users started
    (connections opened) or stopped (the requests in flight at the stop), not while they ran."""
    out = []
    rows = data.timeseries
    if rows is None or "covered_s" not in rows:
        return out
    for endpoint in data.endpoints:
        top = endpoint.latency_us.get("max", 0)
        mine = rows[rows["endpoint"] == endpoint.name]
        if not top or mine.empty:
            continue
        for row, which, when in ((mine.iloc[-1], "last", "ended as the users stopped"),
                                 (mine.iloc[0], "first", "began as the users started")):  # fmt: skip
            if row["covered_s"] < PARTIAL_WINDOW * data.window_s and row["max_us"] == top:
                out.append(
                    f"{endpoint.name}: the run's max latency, {_ms(top)}, came in its {which} window, a partial one "
                    f"({row['covered_s']:g} s, {int(row['requests']):,} requests) that {when}; the over-time "
                    "plots leave it out."
                )
                break
    return out


def _during_stop(data: Dataset) -> list[str]:
    """The requests that ended during the test's stop (in flight when it came, finished or cut
    in the stop grace): named, with the slowest, and whether the run's max latency is theirs."""
    out = []
    for endpoint in data.endpoints:
        tail = endpoint.ended_during_stop
        if tail is None or not tail.requests:
            continue
        text = (
            f"{endpoint.name}: {tail.requests:,} request{'s' if tail.requests != 1 else ''} ended during the "
            "test's stop (in flight when it stopped, they ended in the stop grace)"
        )
        if tail.failures:
            text += f", {tail.failures:,} of them failed"
        if tail.max_us is not None:
            text += f"; the slowest took {_ms(tail.max_us)}"
            if tail.max_us == endpoint.latency_us.get("max"):
                text += ", which is the run's max latency (it came as the test stopped, not while it ran)"
        out.append(text + ". They are counted in every figure.")
    return out


def _open_loop(data: Dataset) -> list[str]:
    out = []
    if not data.open_loop:
        return out
    for endpoint in data.endpoints:
        if endpoint.late is not None and endpoint.requests:
            out.append(
                f"{endpoint.name}: {endpoint.late:,} of {endpoint.requests:,} requests "
                f"({late_ratio(endpoint.late, endpoint.requests):.1%}) went out more than 1 ms after their "
                "intended send time."
            )
        if endpoint.dropped:
            due = endpoint.requests + endpoint.dropped
            out.append(
                f"{endpoint.name}: {endpoint.dropped:,} of {due:,} due requests ({endpoint.dropped / due:.1%}) "
                "were dropped because the in-flight limit was reached."
            )
        uncorrected = (endpoint.latency_uncorrected_us or {}).get("p99")
        corrected = endpoint.latency_us.get("p99")
        if uncorrected and corrected:
            out.append(
                f"{endpoint.name}: corrected p99 (from the intended send time) is {_ms(corrected)}, "
                f"uncorrected (from the actual send) {_ms(uncorrected)}: "
                f"{corrected / uncorrected:.2f}x, {(corrected - uncorrected) / 1000:+,.3f} ms."
            )
    return out


def _composition(frame: pd.DataFrame, level_kind: str) -> list[str]:
    """Where the mean latency goes: the level where queueing weighs most, and the client side."""
    out = []
    rows = [r for r in frame.to_dict("records") if r["mean_us"] > 0 and not math.isnan(r["queue_us"])]
    if not rows:
        return out
    worst = max(rows, key=lambda r: r["queue_us"] / r["mean_us"])
    share = worst["queue_us"] / worst["mean_us"]
    if share >= QUEUE_SHARE_WORTH_NOTING or len(rows) == 1:
        out.append(
            f"Server queue time is {share:.0%} of the mean latency {_at(worst, level_kind)} "
            f"({_ms(worst['queue_us'])} of {_ms(worst['mean_us'])})."
        )
    last = rows[-1]
    parts = ("compute_input_us", "compute_infer_us", "compute_output_us", "compute_total_us")
    measured = [last[key] for key in parts if not math.isnan(last.get(key, math.nan))]
    if measured:  # a source without compute columns says nothing about compute (not "0 %")
        compute = sum(measured)
        out.append(
            f"Compute (input + infer + output) is {compute / last['mean_us']:.0%} of the mean latency "
            f"{_at(last, level_kind)} ({_ms(compute)} of {_ms(last['mean_us'])})."
        )
    streaming = last.get("streaming_us", math.nan)
    if not math.isnan(streaming):
        out.append(
            f"The model's later responses + send/recv + network are {streaming / last['mean_us']:.0%} of the "
            f"mean latency {_at(last, level_kind)} ({_ms(streaming)}): for a decoupled model Triton's compute "
            "counts only its execute call, so the time to its later responses is here, not split from the network."
        )
    client = last["client_network_us"]
    if not math.isnan(client):
        out.append(
            f"{SEND_RECV_NETWORK.capitalize()} is {client / last['mean_us']:.0%} of the mean latency "
            f"{_at(last, level_kind)} ({_ms(client)})."
        )
    wait = last.get("client_wait_us", math.nan)
    if not math.isnan(wait):
        out.append(
            f"Waiting to be sent (open loop: due but held back by the generator or the in-flight cap) is "
            f"{wait / last['mean_us']:.0%} of the mean latency {_at(last, level_kind)} ({_ms(wait)})."
        )
    return out


def _saturation(frame: pd.DataFrame, level_kind: str) -> list[str]:
    """Where throughput stops growing along increasing levels (at least three of them)."""
    rows = [r for r in frame.to_dict("records") if not math.isnan(r["infer_per_s"])]
    levels = [r["level"] for r in rows]
    if len(rows) < 3 or any(b <= a for a, b in itertools.pairwise(levels)):
        return []
    for index, record in enumerate(rows[:-1]):
        best_later = max(rows[index + 1 :], key=lambda r: r["infer_per_s"])
        gain = best_later["infer_per_s"] / record["infer_per_s"] - 1 if record["infer_per_s"] else math.inf
        if gain <= GROWTH_THRESHOLD:
            last = rows[-1]
            return [
                f"Throughput stops growing after {_at(record, level_kind).removeprefix('at ')}: "
                f"{record['infer_per_s']:,.1f} infer/s there, at most {best_later['infer_per_s']:,.1f} "
                f"({gain:+.1%}) at higher levels, while p99 goes from {_ms(record['p99_us'])} "
                f"to {_ms(last['p99_us'])} {_at(last, level_kind)}."
            ]
    first, last = rows[0], rows[-1]
    return [
        f"Throughput still grows at the highest level: {first['infer_per_s']:,.1f} infer/s {_at(first, level_kind)}, "
        f"{last['infer_per_s']:,.1f} {_at(last, level_kind)}."
    ]


def _batching(data: Dataset) -> list[str]:
    if data.run is None:
        return []
    out = []
    models = (data.run.config.get("triton") or {}).get("models") or {}
    for model, entry in sorted(data.run.server.items()):
        config = (models.get(model) or {}).get("config") or {}
        if not entry.get("executions"):
            continue
        batching = "dynamic batching on" if config.get("dynamic_batching") is not None else "no dynamic batching"
        out.append(
            f"{model}: Triton ran {entry['avg_batch']:.2f} inferences per execution on average "
            f"({entry['inferences']:,} in {entry['executions']:,} executions; max_batch_size "
            f"{config.get('max_batch_size', '?')}, {batching})."
        )
    return out


def _load_generator(data: Dataset) -> list[str]:
    generator = data.run.load_generator if data.run else {}
    out = []
    throttled = generator.get("cpu_throttled_periods")
    if throttled:
        out.append(
            f"The load generator was CPU-throttled by its container's limit in {throttled:,} of "
            f"{generator.get('cpu_periods', 0):,} scheduling periods ({generator.get('cpu_throttled_s', 0):,.3f} s "
            "in all): that wait is inside the measured latencies; raise the workers' CPU limit or add "
            "workers (docs/guides/gke.md)."
        )
    per_request = generator.get("cpu_per_request_us")
    if per_request:
        out.append(
            f"The load generator spent {per_request:,.1f} µs of CPU per request: one core drives about "
            f"{1e6 / per_request:,.0f} requests/s."
        )
    return out
