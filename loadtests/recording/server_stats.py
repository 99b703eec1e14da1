"""Triton's server-side breakdown: /v2/models/<m>/stats snapshots and their deltas.

Triton's statistics are cumulative counters since the model loaded. A load test reads
them at the start and end of a run (and every few seconds between) and reports the
difference, the way perf_analyzer does (src/inference_profiler.cc in
triton-inference-server/perf_analyzer: `SummarizeServerStatsHelper` subtracts the start
status from the end status per (model, version); `ReportServerSideStats` divides):

    requests          success.count delta
    failed_requests   fail.count delta
    executions        execution_count delta (one per batch the model ran)
    inferences        inference_count delta (batch-weighted)
    avg_batch         inferences / executions
    request_us        success.ns / success.count        perf_analyzer's "Avg request latency"
    queue_us          queue.ns / queue.count            "queue"
    compute_input_us  compute_input.ns / compute_input.count, likewise infer and output
    batch_sizes       {"4": executions} from batch_stats: batch_stats[i].compute_infer.count
                      per executed batch_size (the batches the dynamic batcher formed)

Every time is an average per request, not per execution: inference_stats counts each
request (batch_stats is the per-execution view), so an execution that batched 4 requests
adds 4 to compute_infer.count and each request's duration to compute_infer.ns (measured
here: 40 requests to `identity` ran in 34 executions and added 40 to compute_infer.count).
perf_analyzer divides each duration by its own count. Triton's statistics extension
(docs/protocol/extension_statistics.md in triton-inference-server/server) counts response
cache hits in success and queue but not in compute_*, so without a response cache every
divisor equals the success count. Two deliberate differences: perf_analyzer floors each average to whole
microseconds and we keep fractions (sub-millisecond models need them; floor to reproduce
its CSV), and it picks one version while we sum the versions (below).

Versions: a model's raw stats are kept per loaded version ({"1": entry, ...}); deltas are
taken per version and summed, so a client that does not name a version (as ours do) is
counted whichever version served it. perf_analyzer instead picks the version whose queue
count grew, warning when several did. A version missing from the earlier snapshot counts
from zero, as perf_analyzer does; a version whose counters went down (Triton restarted, or
the model was reloaded) counts from zero too, as Prometheus treats a counter reset.

Facts checked against the local Triton 2.51 (CPU): a Python-backend error response
counts as a success; a request Triton rejects before the model (wrong shape) counts in
neither success nor fail; model warm-up requests count as successes; in 200 sequential
requests the counters always included a request by the time its response arrived.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.client import HTTPException
from typing import Any

import gevent

from loadtests.errors import ServerError

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_INTERVAL_S = 5.0
# A server unreachable for a whole hour at 5 s is 720 errors; keep the first ones, count the rest.
MAX_RECORDED_ERRORS = 100

# The cumulative counters of one version's stats entry, by our name.
_DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")
# Executions per batch size ride along in the counters as "batch_size:<n>", so that deltas,
# resets and the interval-by-interval sums treat them exactly like the other counters.
_BATCH_PREFIX = "batch_size:"


# -- HTTP, shared with loadtests.recording.metrics ------------------------------------------
def base_url(address: str) -> str:
    """host:port as the options give it, or a URL already: 'localhost:8000' -> 'http://localhost:8000'."""
    address = address.rstrip("/")
    return address if address.startswith(("http://", "https://")) else f"http://{address}"


def http_get(url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> bytes:
    """GET a URL; every way it can fail becomes one ServerError naming the URL.

    urllib, not tritonclient: it works in plain Python and, once Locust has monkey-patched
    the standard library, cooperatively inside the gevent loop.

    Example:
        http_get("http://localhost:8002/metrics")[:6]  # b'# HELP'
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        # Triton explains a 4xx in the body, e.g. {"error":"requested model 'x' is not available"}.
        raise ServerError(f"GET {url}: HTTP {exc.code} {_error_body(exc)}") from exc
    except (OSError, HTTPException) as exc:
        # URLError, timeouts and resets are OSErrors; a truncated body is an HTTPException.
        raise ServerError(f"GET {url}: {type(exc).__name__}: {exc}") from exc


def _error_body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", "replace").strip()[:200]
    except (OSError, HTTPException):
        return ""


# -- fetching ---------------------------------------------------------------------------------
def fetch_stats(http_address: str, models: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, dict]:
    """Each model's raw statistics, per loaded version: {model: {version: model_stats entry}}.

    Raises ServerError if Triton cannot be reached or does not serve one of the models.

    Example:
        fetch_stats("localhost:8000", ["resnet50"])["resnet50"]["1"]["inference_count"]  # 1234
    """
    out = {}
    for model in models:
        url = f"{base_url(http_address)}/v2/models/{urllib.parse.quote(model, safe='')}/stats"
        body = http_get(url, timeout_s)
        try:
            entries = json.loads(body)["model_stats"]
            out[model] = {str(entry["version"]): entry for entry in entries}
        except (ValueError, KeyError, TypeError) as exc:
            raise ServerError(f"GET {url}: not a statistics response ({type(exc).__name__}: {exc})") from exc
    return out


@dataclass(frozen=True)
class StatsSnapshot:
    """Raw statistics of the models under test at one moment (time_s: Unix time, seconds).

    Example:
        StatsSnapshot(time.time(), fetch_stats("localhost:8000", ["resnet50"]))
    """

    time_s: float
    models: dict[str, dict]

    def to_json(self) -> dict:
        return {"time_s": self.time_s, "models": self.models}


def take_snapshot(
    http_address: str,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Callable[[], float] = time.time,
) -> StatsSnapshot:
    """fetch_stats, stamped with the time the answers arrived."""
    stats = fetch_stats(http_address, models, timeout_s)
    return StatsSnapshot(clock(), stats)


# -- deltas ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelDelta:
    """What one model did between two snapshots; times are microseconds per request.

    Example:
        ModelDelta(requests=100, failed_requests=0, executions=25, inferences=400, avg_batch=16.0,
                   queue_us=120.5, compute_input_us=30.1, compute_infer_us=850.0,
                   compute_output_us=12.3, request_us=1020.7).overhead_us  # about 7.8
    """

    requests: int = 0
    failed_requests: int = 0
    executions: int = 0
    inferences: int = 0
    avg_batch: float = 0.0
    queue_us: float = 0.0
    compute_input_us: float = 0.0
    compute_infer_us: float = 0.0
    compute_output_us: float = 0.0
    request_us: float = 0.0
    # Executions per executed batch size, {"1": 30, "4": 10} (sizes as strings, as in JSON).
    batch_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def overhead_us(self) -> float:
        """Server time outside queue and compute, never negative (perf_analyzer's "overhead")."""
        components = self.queue_us + self.compute_input_us + self.compute_infer_us + self.compute_output_us
        return max(0.0, self.request_us - components)

    def to_json(self) -> dict:
        out = asdict(self)
        out["overhead_us"] = self.overhead_us
        # Three decimals of a microsecond are nanoseconds, the counters' own resolution.
        return {key: round(value, 3) if isinstance(value, float) else value for key, value in out.items()}


def _counters(entry: dict) -> dict[str, int]:
    """The cumulative counters of one version's entry; a field Triton did not send counts as 0."""
    stats = entry.get("inference_stats", {})
    counters = {"executions": int(entry.get("execution_count", 0)), "inferences": int(entry.get("inference_count", 0))}
    for name in _DURATIONS:
        counters[f"{name}_count"] = int(stats.get(name, {}).get("count", 0))
        counters[f"{name}_ns"] = int(stats.get(name, {}).get("ns", 0))
    # One batch_stats entry per batch size the model has executed: its compute_infer.count is
    # the executions at that size (one per batch, unlike inference_stats' per-request counts).
    for batch in entry.get("batch_stats") or []:
        counters[f"{_BATCH_PREFIX}{int(batch['batch_size'])}"] = int(batch.get("compute_infer", {}).get("count", 0))
    return counters


def _version_delta(before: dict | None, after: dict) -> dict[str, int]:
    end = _counters(after)
    start = _counters(before) if before is not None else dict.fromkeys(end, 0)
    if _went_down(start, end):
        return end  # counters reset (restart or reload): everything counted since
    # A batch size first executed after `before` counts from zero.
    return {key: end[key] - start.get(key, 0) for key in end}


def _went_down(start: dict[str, int], end: dict[str, int]) -> bool:
    return any(end[key] < start.get(key, 0) for key in end)


def _per_request_us(total_ns: int, count: int) -> float:
    return total_ns / count / 1000 if count else 0.0


def counter_delta(before: dict | None, after: dict) -> dict[str, int]:
    """The summed counters of one model's raw stats ({version: entry}) between two snapshots."""
    totals: dict[str, int] = {}
    for version, entry in after.items():
        for key, value in _version_delta((before or {}).get(version), entry).items():
            totals[key] = totals.get(key, 0) + value
    return totals


def delta_of_counters(totals: dict[str, int]) -> ModelDelta:
    """Counters (from counter_delta, possibly added up over intervals) as per-request averages."""
    if not totals:
        return ModelDelta()
    return ModelDelta(
        requests=totals["success_count"],
        failed_requests=totals["fail_count"],
        executions=totals["executions"],
        inferences=totals["inferences"],
        avg_batch=totals["inferences"] / totals["executions"] if totals["executions"] else 0.0,
        queue_us=_per_request_us(totals["queue_ns"], totals["queue_count"]),
        compute_input_us=_per_request_us(totals["compute_input_ns"], totals["compute_input_count"]),
        compute_infer_us=_per_request_us(totals["compute_infer_ns"], totals["compute_infer_count"]),
        compute_output_us=_per_request_us(totals["compute_output_ns"], totals["compute_output_count"]),
        request_us=_per_request_us(totals["success_ns"], totals["success_count"]),
        batch_sizes=_batch_sizes(totals),
    )


def _batch_sizes(totals: dict[str, int]) -> dict[str, int]:
    sizes = {int(key[len(_BATCH_PREFIX) :]): count for key, count in totals.items() if key.startswith(_BATCH_PREFIX)}
    return {str(size): sizes[size] for size in sorted(sizes) if sizes[size]}


def model_delta(before: dict | None, after: dict) -> ModelDelta:
    """The delta of one model's raw stats ({version: entry}); `before` None means no stats yet."""
    return delta_of_counters(counter_delta(before, after))


def model_restarted(before: dict | None, after: dict) -> bool:
    """True when a version's counters went down between two snapshots (Triton restarted or reloaded it)."""
    return any(
        _went_down(_counters(before[version]), _counters(entry))
        for version, entry in after.items()
        if before and version in before
    )


def compute_delta(before: StatsSnapshot, after: StatsSnapshot) -> dict[str, ModelDelta]:
    """Per model, what happened between two snapshots.

    A model absent from `before` counts from zero; a model absent from `after` (its stats
    could not be read) is left out rather than reported as idle.

    Example:
        compute_delta(start, end)["resnet50"].avg_batch  # 3.9
    """
    return {model: model_delta(before.models.get(model), raw) for model, raw in after.models.items()}


# -- periodic sampling under gevent -----------------------------------------------------------
class PeriodicSampler:
    """Calls `sample()` now, every `interval_s` in a gevent greenlet, and once more at stop.

    A ServerError from `sample` (Triton unreachable, a model unloaded) is recorded in
    `errors` and the next tick tries again: a load test must not die because a scrape did.
    Other exceptions are bugs and end the greenlet loudly. Shared by both pollers.

    Example:
        sampler = PeriodicSampler(lambda: print("tick"), interval_s=1.0)
        sampler.start(); gevent.sleep(2.5); sampler.stop()  # ticks at 0, 1 and 2 s, and at the stop
    """

    def __init__(
        self,
        sample: Callable[[], None],
        interval_s: float,
        clock: Callable[[], float] = time.time,
        before_tick: Callable[[], None] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self._sample = sample
        # Called before every sample (periodic or on demand): open-loop traffic waits there for
        # a gap in its send schedule, since a scrape blocks the gevent loop for a few ms.
        self.before_tick = before_tick
        self.interval_s = interval_s
        self.clock = clock
        self.errors: list[dict[str, Any]] = []
        self.errors_dropped = 0
        self._greenlet: gevent.Greenlet | None = None
        self._stopped = False

    def sample_now(self) -> None:
        if self.before_tick is not None:
            self.before_tick()
        try:
            self._sample()
        except ServerError as exc:
            if len(self.errors) < MAX_RECORDED_ERRORS:
                self.errors.append({"time_s": self.clock(), "error": str(exc)})
            else:
                self.errors_dropped += 1

    def start(self) -> None:
        if self._greenlet is not None:
            raise RuntimeError("already started")
        self.sample_now()
        self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        # Ticks on a fixed schedule (no drift from the time a scrape takes); a scrape longer
        # than the interval skips the ticks it overran instead of firing them back to back.
        start = time.monotonic()
        ticks = 0
        while True:
            ticks = max(ticks + 1, int((time.monotonic() - start) / self.interval_s) + 1)
            gevent.sleep(max(0.0, start + ticks * self.interval_s - time.monotonic()))
            self.sample_now()

    def stop(self) -> None:
        """Ends the greenlet (waiting for it) and samples a last time; a second call does nothing."""
        if self._stopped:
            return
        self._stopped = True
        if self._greenlet is not None:
            self._greenlet.kill(block=True)
        self.sample_now()

    @property
    def running(self) -> bool:
        return self._greenlet is not None and not self._greenlet.dead


class ServerStatsPoller:
    """Snapshots Triton's statistics for the models under test every `interval_s` during a run.

    Runs in a gevent greenlet (Locust's loop): start() at test start, stop() at test end.
    Memory: one raw entry per model per snapshot, about 7 KB as Python objects (1 KB of
    JSON; more with each distinct batch size seen), so a one-hour run at 5 s keeps about
    5 MB per model.

    Example:
        poller = ServerStatsPoller("localhost:8000", ["resnet50"], interval_s=5.0)
        poller.start()
        ...  # the load
        poller.stop()
        poller.total_delta()["resnet50"].compute_infer_us  # 850.2
        json.dump(poller.to_json(), open("server_stats.json", "w"))
    """

    def __init__(
        self,
        http_address: str,
        models: list[str],
        interval_s: float = DEFAULT_INTERVAL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        before_tick: Callable[[], None] | None = None,
    ) -> None:
        self.http_address = http_address
        self.models = list(models)
        self.timeout_s = timeout_s
        self.snapshots: list[StatsSnapshot] = []
        self._sampler = PeriodicSampler(self._take, interval_s, clock, before_tick)

    def _take(self) -> None:
        # All models or none: a snapshot missing a model would make the next delta count
        # that model's whole history.
        self.snapshots.append(take_snapshot(self.http_address, self.models, self.timeout_s, self._sampler.clock))

    @property
    def interval_s(self) -> float:
        return self._sampler.interval_s

    @property
    def errors(self) -> list[dict[str, Any]]:
        """[{"time_s": ..., "error": "GET http://...: ..."}] for every snapshot that failed."""
        return self._sampler.errors

    @property
    def running(self) -> bool:
        return self._sampler.running

    def start(self) -> None:
        """Takes the first snapshot now and starts the periodic greenlet; never raises for an
        unreachable server (see errors): check reachability before the load, e.g. with fetch_stats."""
        self._sampler.start()

    def stop(self) -> None:
        """Stops the greenlet and takes the final snapshot."""
        self._sampler.stop()

    def snapshot_now(self) -> StatsSnapshot | None:
        """An extra snapshot (e.g. at a sweep step's boundary); None if it failed (see errors)."""
        count = len(self.snapshots)
        self._sampler.sample_now()
        return self.snapshots[-1] if len(self.snapshots) > count else None

    def nearest_snapshot(self, time_s: float) -> StatsSnapshot | None:
        if not self.snapshots:
            return None
        times = [snapshot.time_s for snapshot in self.snapshots]
        i = bisect_left(times, time_s)
        candidates = [j for j in (i - 1, i) if 0 <= j < len(times)]
        return self.snapshots[min(candidates, key=lambda j: abs(times[j] - time_s))]

    def delta_between(self, t0: float, t1: float) -> dict[str, ModelDelta]:
        """The delta between the snapshots nearest to t0 and t1 (Unix seconds); {} before any snapshot."""
        if t1 < t0:
            raise ValueError(f"t1 ({t1}) is before t0 ({t0})")
        before, after = self.nearest_snapshot(t0), self.nearest_snapshot(t1)
        if before is None or after is None:
            return {}
        return compute_delta(before, after)

    def total_delta(self) -> dict[str, ModelDelta]:
        """First snapshot to last: the whole run. {} before any snapshot.

        Summed interval by interval, so a Triton restart mid-run (counters back near zero)
        adds the new server's counts to the old one's instead of replacing them. What the old
        server did between its last snapshot and its end is not known (see restarts()).
        """
        if not self.snapshots:
            return {}
        totals: dict[str, dict[str, int]] = {model: {} for model in self.snapshots[0].models}
        for before, after in zip(self.snapshots, self.snapshots[1:], strict=False):
            for model, raw in after.models.items():
                model_totals = totals.setdefault(model, {})
                for key, value in counter_delta(before.models.get(model), raw).items():
                    model_totals[key] = model_totals.get(key, 0) + value
        return {model: delta_of_counters(counters) for model, counters in totals.items()}

    def restarts(self) -> list[dict[str, Any]]:
        """Where the counters went down between two snapshots: Triton (or a model) restarted in
        between. [{"after_s": last snapshot before, "before_s": first snapshot after, "models": [...]}]"""
        found = []
        for before, after in zip(self.snapshots, self.snapshots[1:], strict=False):
            models = sorted(m for m, raw in after.models.items() if model_restarted(before.models.get(m), raw))
            if models:
                found.append({"after_s": before.time_s, "before_s": after.time_s, "models": models})
        return found

    def interval_deltas(self) -> list[tuple[float, float, dict[str, ModelDelta]]]:
        """(start_s, end_s, deltas) between each pair of consecutive snapshots."""
        pairs = zip(self.snapshots, self.snapshots[1:], strict=False)
        return [(a.time_s, b.time_s, compute_delta(a, b)) for a, b in pairs]

    def to_json(self) -> dict:
        """The content of server_stats.json: raw snapshots, the run's delta and each interval's."""
        return {
            "http_address": self.http_address,
            "models": self.models,
            "interval_s": self.interval_s,
            "snapshots": [snapshot.to_json() for snapshot in self.snapshots],
            "deltas": {
                "total": _deltas_json(self.total_delta()),
                "intervals": [
                    {"start_s": start, "end_s": end, "models": _deltas_json(deltas)}
                    for start, end, deltas in self.interval_deltas()
                ],
            },
            "restarts": self.restarts(),
            "errors": self.errors,
            "errors_dropped": self._sampler.errors_dropped,
        }


def _deltas_json(deltas: dict[str, ModelDelta]) -> dict[str, dict]:
    return {model: delta.to_json() for model, delta in deltas.items()}
