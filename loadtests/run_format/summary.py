"""summary.json's schema, the late ratio, and the merge of endpoint entries (overall, per model).

Written by the load test (loadtests/recording/run_dir.py writes the endpoints,
loadtests/run/slo_gate.py the merged `overall` and `model_totals`), read by analysis/ and by
`python -m analysis check`. The TypedDicts below are the keys each side may rely on; keys
marked NotRequired are absent in closed-loop runs or in run directories from older versions.

    summary = json.loads((run_dir / SUMMARY_JSON).read_text())
    entry: EndpointEntry = summary["endpoints"][0]
    late_ratio(entry["late"], entry["requests"])
"""

from typing import NotRequired, TypedDict

# The name of the entry that merges every endpoint of the run.
OVERALL = "overall"
# Counts that only open-loop traffic records (summary.json keys of an endpoint entry).
LATE = "late"
DROPPED = "dropped"
OPEN_LOOP_COUNTS = (LATE, DROPPED)
# How sequence users' sequences went: summary.json's `sequences_<key>` of an endpoint entry.
SEQUENCE_COUNTS = ("started", "completed", "failed", "ended_early")


class EntryTotals(TypedDict):
    """The keys every summary.json entry has, an endpoint's or a merge of endpoints'. Latencies in µs."""

    name: str  # "bert_qa [grpc]", a model's name, or OVERALL
    requests: int
    failures: int
    failures_by_class: dict[str, int]
    inferences: int
    duration_s: float
    throughput_rps: float
    throughput_infer_per_s: float
    latency_us: dict[str, float]  # hdr.LATENCY_KEYS: p50 ... p99.9, max, mean
    confidence: NotRequired[float]  # the level latency_ci_us holds (confidence.DEFAULT_CONFIDENCE)
    latency_ci_us: NotRequired[dict[str, list[float | None]]]  # [lower, upper] per percentile key
    late: NotRequired[int]  # open loop only, like dropped
    dropped: NotRequired[int]


class DuringStopEntry(TypedDict):
    """An endpoint's `ended_during_stop`: its requests that were in flight when the test's stop
    began (STOP, the run time's end, a load shape's end, Ctrl-C) and ended before the stop grace
    did, completed or cut as `interrupted`. They are in the endpoint's counts and latencies too.
    Absent from run directories of older versions (not known, not zero)."""

    requests: int
    failures: int
    max_us: float | None  # the slowest success among them, as latency_us's max reads it; None: none succeeded


class EndpointEntry(EntryTotals):
    """One element of summary.json's "endpoints": one endpoint's whole run."""

    model: str
    protocol: str
    bytes_sent: NotRequired[int]
    bytes_received: NotRequired[int]
    bytes_sent_per_s: NotRequired[float]
    bytes_received_per_s: NotRequired[float]
    bytes_sent_per_request: NotRequired[float]  # payload bytes per request (body or gRPC message)
    bytes_received_per_request: NotRequired[float]
    requested_batch_sizes: NotRequired[dict[str, int]]  # {"1": 700, "2": 300}
    # Open loop: latency_us is timed from the intended send, this from the actual send.
    latency_uncorrected_us: NotRequired[dict[str, float]]
    # Sequence users only (SEQUENCE_COUNTS): sequences started, and how each ended: completed
    # (every response's sum right), failed (a request failed; the sequence was ended), or
    # ended early (cut short by the test's stop, its last request carrying END).
    sequences_started: NotRequired[int]
    sequences_completed: NotRequired[int]
    sequences_failed: NotRequired[int]
    sequences_ended_early: NotRequired[int]
    # Several Triton replicas: {address: {"requests", "failures", "mean_latency_us"}}.
    replicas: NotRequired[dict[str, dict]]
    ended_during_stop: NotRequired[DuringStopEntry]


class MergedEntry(EntryTotals):
    """summary.json's "overall" and each "model_totals" value: endpoints merged by `combine`
    (the latency from the merged histograms, with its interval)."""

    endpoints: list[str]


class MixBlock(TypedDict):
    """summary.json's "mix" (runs with --mix): the weights asked for beside the shares measured.

    Shares are each model's requests (over its endpoints, failures included; open-loop drops
    excluded, as they were never sent) over the mix's requests.
    """

    given: str  # the --mix value: the MODEL:WEIGHT list or the mix file's path
    weights: dict[str, float]  # normalised, sum 1
    requests: dict[str, int]
    shares: dict[str, float]


class Summary(TypedDict):
    """summary.json as a whole."""

    traffic: dict  # {"mode": "closed"} or the open-loop pattern (mode, rate, ...)
    endpoints: list[EndpointEntry]
    server: dict  # Triton's breakdown per model (loadtests/triton_stats/statistics.py)
    # Several replicas: the same breakdown per replica, {HTTP address: {model: {...}}}; `server`
    # is their sum per model.
    server_replicas: NotRequired[dict[str, dict]]
    load_generator: dict  # cpu_s, cpu_per_request_us, cpu_throttled_s, ..., workers
    overall: NotRequired[MergedEntry]
    model_totals: NotRequired[dict[str, MergedEntry]]  # models with several endpoints
    faults: NotRequired[dict]  # lost workers, restarts, unreachable spans (faults.py words them)
    # Worker reports that arrived after their window was written (distributed runs): counted
    # in the totals, missing from timeseries.csv.
    late_worker_windows: NotRequired[int]
    slo: NotRequired[list[dict]]  # one verdict per --slo clause (slo.Result.to_json)
    mix: NotRequired[MixBlock]  # --mix runs only


def late_ratio(late: int, requests: int) -> float:
    """The share of sent requests that went out late (dropped ones were never sent): the one
    definition the console warning, the findings and the `late_ratio` gate share."""
    return late / requests if requests else 0.0


def combine(entries: list[dict], name: str, latency_us: dict[str, float]) -> dict:
    """Several summary.json endpoint entries as one: counts and throughput summed.

    Percentiles cannot be summed: `latency_us` must come from the merged histograms.
    """
    failures_by_class: dict[str, int] = {}
    for entry in entries:
        for failure, count in entry.get("failures_by_class", {}).items():
            failures_by_class[failure] = failures_by_class.get(failure, 0) + int(count)
    combined = {
        "name": name,
        "endpoints": [entry["name"] for entry in entries],
        "requests": sum(int(entry["requests"]) for entry in entries),
        "failures": sum(int(entry["failures"]) for entry in entries),
        "failures_by_class": dict(sorted(failures_by_class.items())),
        "inferences": sum(int(entry["inferences"]) for entry in entries),
        "duration_s": max((float(entry["duration_s"]) for entry in entries), default=0.0),
        "throughput_rps": round(sum(float(entry["throughput_rps"]) for entry in entries), 3),
        "throughput_infer_per_s": round(sum(float(entry["throughput_infer_per_s"]) for entry in entries), 3),
        "latency_us": dict(latency_us),
    }
    for key in OPEN_LOOP_COUNTS:
        if entries and all(key in entry for entry in entries):
            combined[key] = sum(int(entry[key]) for entry in entries)
    return combined


def mix_block(given: str, weights: dict[str, float], requests: dict[str, int]) -> MixBlock:
    """summary.json's "mix" from the weights and each model's requests (models in the weights' order)."""
    counts = {model: int(requests.get(model, 0)) for model in weights}
    total = sum(counts.values())
    return {
        "given": given,
        "weights": {model: round(weight, 6) for model, weight in weights.items()},
        "requests": counts,
        "shares": {model: round(count / total, 6) if total else 0.0 for model, count in counts.items()},
    }
