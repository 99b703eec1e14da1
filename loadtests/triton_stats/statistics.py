"""Triton's server-side breakdown: statistics snapshots and their deltas (pure arithmetic).

The snapshots are taken by loadtests.triton_stats.poller through loadtests.clients.control;
this module only does the sums, so it imports no network and no gevent.

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

Replicas (several `--triton-http` addresses, or a name resolving to several): each replica's
raw entries are kept under "<version>@<address>" keys of the same model ({"1@10.4.0.7:8000":
entry, ...}), so every delta above sums the replicas exactly as it sums versions (a replica
that joins counts from zero; one whose counters go down restarted), and `replica_view`
takes one replica's view back out for the per-replica breakdown. One address keeps plain
version keys: a single-server run's files are what they always were.

Facts checked against the local Triton 2.51 (CPU): a Python-backend error response
counts as a success; a request Triton rejects before the model (wrong shape) counts in
neither success nor fail; model warm-up requests count as successes; in 200 sequential
requests the counters always included a request by the time its response arrived.

A run's statistics snapshots, folded one at a time: what a run keeps of them in memory.

A snapshot is 5-14 KB of Python objects per model (3 KB of JSON), and a soak polls for
hours, so a run does not hold its snapshots: each is folded into the running sums below the
moment it arrives, streamed to the run directory (`ServerStatsLog` below), and dropped. What is
kept is the same size after ten snapshots as after a hundred thousand: the last snapshot (the
next delta's start, and a replica's carried-forward entries), the counters summed interval by
interval per model and per replica, the last interval's deltas (the live views), and the
restarts (one record per counter reset, not per snapshot).

The sums are the ones described above: a version or replica that first appears
counts from zero, a counter that went down counts from zero (a restart), and the run's total
is the intervals' sum, so a Triton restart mid-run adds both lifetimes.

A restart the counters do not show: Triton has no start time or instance id, so a restart is
seen as counters going down. When the first snapshot after it comes late (Triton was down for
several polls), the new server may already have counted more than the old one had, and the
counters went up: fresh53's drill read 1,590 before the kill and 2,102 after, and summed 512
where the new server alone had counted 2,102. The client's answers show it, in an interval in
which a snapshot failed (the restart's outage; a restart so quick that no snapshot failed is
left to the counters, and so is a client that sends to another server than the statistics are
read from, which never fails a snapshot). Triton counts a
request as a success before its response leaves (checked: in 200 sequential requests the
counters always held a request by the time its answer arrived), so between two snapshots it
counted at least the successes the client received of the requests it sent after the first
snapshot and had answered before the second was asked for. Each closed window of the client's
(`client_window`) gives, per model, its successes faster than each bound of a latency grid; a
window that starts `gap` seconds into a span counts those faster than the largest bound <= gap
(sent after the span's first snapshot), and only windows that end before the second snapshot was
asked. When that lower bound exceeds what Triton's counter rose by (beyond a margin for clocks
and a decoupled model's late release), the span is a restart: it is counted from zero, as one
whose counters went down, and recorded with `found_by`. Only whole counts are lost in the other
direction: a restart whose old server had counted fewer than about one window of answers is not
found (what it loses is that small). Per-replica runs (several addresses) are left to the
counters: the client's answers are not split by the statistics' address. server_intervals.jsonl
keeps what the counters said of each interval; the total and server_stats.json are corrected.

Example:
    series = SnapshotSeries()
    for snapshot in snapshots:
        interval = series.add(snapshot)  # (start_s, end_s, {model: ModelDelta}), None for the first
    series.total_delta()["resnet50"].requests  # 1200

Triton's statistics in the run directory: streamed as they arrive, summed at the end.

    server_snapshots.jsonl   one line per snapshot, appended as it is taken:
                             {"time_s", "models": {model: {version: Triton's model_stats entry}}}
    server_intervals.jsonl   one line per interval between two consecutive snapshots:
                             {"start_s", "end_s", "models": {model: ModelDelta}}
    server_stats.json        at the end: {"http_address", "models", "interval_s", "snapshot_count",
                             "snapshots_file", "intervals_file", "deltas": {"total": {model: ModelDelta}},
                             "restarts": [...], "errors": [{"time_s", "error"}], "errors_dropped": n}

Streamed, not held: a soak polls for hours and a snapshot is 5-14 KB of Python objects
per model (`SnapshotSeries` above keeps only running sums). Each line is flushed as written,
so a master that is killed mid-run leaves every snapshot taken so far. Runs written before
the streaming kept both lists inside server_stats.json ("snapshots", "deltas"."intervals");
analysis/dataset.py reads either form.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from loadtests.run_format.faults import FOUND_BY_CLIENT, FOUND_BY_COUNTERS
from loadtests.run_format.files import SERVER_INTERVALS_JSONL, SERVER_SNAPSHOTS_JSONL

# The cumulative counters of one version's stats entry, by our name.
_DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")
# Executions per batch size ride along in the counters as "batch_size:<n>", so that deltas,
# resets and the interval-by-interval sums treat them exactly like the other counters.
_BATCH_PREFIX = "batch_size:"


@dataclass(frozen=True)
class StatsSnapshot:
    """Raw statistics of the models under test at one moment (time_s: Unix time, seconds).

    Example:
        StatsSnapshot(time.time(), TritonControl("localhost:8000").statistics(["resnet50"]))
    """

    time_s: float
    models: dict[str, dict]
    # When the statistics were asked for (None: at time_s): Triton read its counters in between.
    asked_s: float | None = None

    def to_json(self) -> dict:
        return {"time_s": self.time_s, "models": self.models}


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


# -- replicas ----------------------------------------------------------------------------------
REPLICA_SEPARATOR = "@"


def replica_key(version: str, address: str) -> str:
    """The key of one replica's entry for a model version: '1@10.4.0.7:8000'."""
    return f"{version}{REPLICA_SEPARATOR}{address}"


def replica_view(snapshot: StatsSnapshot, address: str) -> StatsSnapshot:
    """The snapshot as one replica saw it (its entries, under their plain version keys)."""
    suffix = f"{REPLICA_SEPARATOR}{address}"
    return StatsSnapshot(
        snapshot.time_s,
        {
            model: {key[: -len(suffix)]: entry for key, entry in raw.items() if key.endswith(suffix)}
            for model, raw in snapshot.models.items()
        },
    )


def deltas_json(deltas: dict[str, ModelDelta]) -> dict[str, dict]:
    return {model: delta.to_json() for model, delta in deltas.items()}


Counters = dict[str, int]
Interval = tuple[float, float, dict[str, ModelDelta]]


def _add_into(totals: dict[str, Counters], model: str, counters: Counters) -> None:
    model_totals = totals.setdefault(model, {})
    for key, value in counters.items():
        model_totals[key] = model_totals.get(key, 0) + value


# -- restarts the counters do not show (the module's docstring) --------------------------------
# The latency bounds (s) a window's successes are counted under: how many answers came faster.
CLIENT_LATENCY_GRID_S = (0.001, 0.004, 0.016, 0.064, 0.25, 1.0, 4.0, 16.0, 64.0)
# Workers' clocks against the master's (other hosts: NTP keeps them within milliseconds).
CLOCK_SKEW_S = 0.1
# A span is a restart when the client's lower bound exceeds Triton's rise by more than this share
# of it, and by more than LOST_AT_LEAST requests.
LOST_SHARE = 0.1
LOST_AT_LEAST = 10
# Spans waiting for the client's windows (a window closes up to its grace period late), and the
# client's windows kept for them (an outage of hours: the oldest go, which only lowers the bound).
PENDING_SPANS = 64
KEPT_WINDOWS = 4096


@dataclass
class _Span:
    """An interval between two snapshots, until the client's windows over it are in."""

    start_s: float  # the first snapshot's answer: requests sent later were counted after it
    asked_s: float  # the second snapshot's asking: answers before it were counted before it
    end_s: float
    triton: dict[str, int]  # each model's successes as Triton's counters rose
    counted_before: dict[str, Counters]  # what counting the span from zero adds, per model


def _faster_than(answers: list[int], gap_s: float) -> int:
    """A window's answers sent after a moment `gap_s` before the window began: those faster than
    the largest bound <= gap_s (none when the gap is below every bound)."""
    fitting = [count for bound, count in zip(CLIENT_LATENCY_GRID_S, answers, strict=True) if bound <= gap_s]
    return fitting[-1] if fitting else 0


class SnapshotSeries:
    """The running sums of one run's snapshots (oldest first), in memory that does not grow
    with the number of snapshots (only with models, replicas and restarts)."""

    def __init__(self) -> None:
        self.first: StatsSnapshot | None = None
        self.last: StatsSnapshot | None = None
        self.count = 0
        self.last_interval: Interval | None = None
        # [{"after_s", "before_s", "models", "found_by"}]: where Triton or a model restarted.
        self.restarts: list[dict[str, Any]] = []
        self._totals: dict[str, Counters] = {}
        # Per replica address (in the order first seen), its own counters per model.
        self._replica_totals: dict[str, dict[str, Counters]] = {}
        # Spans not yet judged against the client's answers, and the client's recent windows.
        self._spans: deque[_Span] = deque()
        self._windows: deque[tuple[float, float, dict[str, list[int]]]] = deque(maxlen=KEPT_WINDOWS)

    def add(self, snapshot: StatsSnapshot, unreachable: bool = False) -> Interval | None:
        """Folds the next snapshot in; returns the interval it closes (None for the first).
        `unreachable`: a snapshot failed since the last one (the outage a restart makes; only
        such an interval is judged against the client's answers)."""
        before, self.last = self.last, snapshot
        self.count += 1
        self._note_replicas(snapshot)
        if before is None:
            self.first = snapshot
            self._totals = {model: {} for model in snapshot.models}
            return None
        deltas = {}
        for model, raw in snapshot.models.items():
            counters = counter_delta(before.models.get(model), raw)
            _add_into(self._totals, model, counters)
            deltas[model] = delta_of_counters(counters)
        for address, totals in self._replica_totals.items():
            earlier, later = replica_view(before, address), replica_view(snapshot, address)
            for model, raw in later.models.items():
                _add_into(totals, model, counter_delta(earlier.models.get(model), raw))
        restarted = sorted(m for m, raw in snapshot.models.items() if model_restarted(before.models.get(m), raw))
        if restarted:
            self._restarted(before.time_s, snapshot.time_s, restarted, FOUND_BY_COUNTERS)
        if unreachable and not self._replica_totals:
            self._spans.append(self._span(before, snapshot, deltas, restarted))
            self._judge()
        self.last_interval = (before.time_s, snapshot.time_s, deltas)
        return self.last_interval

    def _span(self, before: StatsSnapshot, after: StatsSnapshot, deltas: dict, restarted: list[str]) -> _Span:
        counted_before = {}
        for model, raw in after.models.items():
            if model in restarted or before.models.get(model) is None:
                continue  # counted from zero already
            rise, whole = counter_delta(before.models[model], raw), counter_delta(None, raw)
            counted_before[model] = {key: whole[key] - rise.get(key, 0) for key in whole}
        triton = {model: deltas[model].requests for model in counted_before}
        asked_s = after.time_s if after.asked_s is None else after.asked_s
        return _Span(before.time_s, asked_s, after.time_s, triton, counted_before)

    def client_window(self, start_s: float, end_s: float, answers: dict[str, list[int]]) -> None:
        """One closed window of the client's (Unix s, in time order): per model, its successes
        faster than each bound of CLIENT_LATENCY_GRID_S. Judges the spans it completes."""
        if self._replica_totals:
            return
        self._windows.append((start_s, end_s, answers))
        self._judge()

    def settle(self) -> None:
        """The run ended (every window is in): judge the spans still waiting."""
        self._judge(final=True)

    def _judge(self, final: bool = False) -> None:
        last_end = self._windows[-1][1] if self._windows else None
        while self._spans:
            span = self._spans[0]
            complete = last_end is not None and last_end > span.asked_s - CLOCK_SKEW_S
            if not (final or complete or len(self._spans) > PENDING_SPANS):
                break
            self._spans.popleft()
            self._judge_span(span)
        # Windows no span can still use: before the oldest waiting span, or the last snapshot.
        keep_from = self._spans[0].start_s if self._spans else (self.last.time_s if self.last else None)
        while self._windows and keep_from is not None and self._windows[0][0] < keep_from:
            self._windows.popleft()

    def _judge_span(self, span: _Span) -> None:
        client: dict[str, int] = {}
        for start_s, end_s, answers in self._windows:
            if start_s < span.start_s or end_s > span.asked_s - CLOCK_SKEW_S:
                continue
            gap_s = start_s - span.start_s - CLOCK_SKEW_S
            for model in span.triton:
                if model in answers:
                    client[model] = client.get(model, 0) + _faster_than(answers[model], gap_s)
        lost = sorted(
            model
            for model, count in client.items()
            if count - span.triton[model] > max(LOST_AT_LEAST, LOST_SHARE * count)
        )
        for model in lost:
            _add_into(self._totals, model, span.counted_before[model])
        if lost:
            self._restarted(span.start_s, span.end_s, lost, FOUND_BY_CLIENT)

    def _restarted(self, after_s: float, before_s: float, models: list[str], found_by: str) -> None:
        self.restarts.append({"after_s": after_s, "before_s": before_s, "models": models, "found_by": found_by})
        self.restarts.sort(key=lambda restart: restart["after_s"])

    def _note_replicas(self, snapshot: StatsSnapshot) -> None:
        for raw in snapshot.models.values():
            for key in raw:
                if REPLICA_SEPARATOR in key:
                    address = key.partition(REPLICA_SEPARATOR)[2]
                    if address not in self._replica_totals:
                        # Every model of the run's first snapshot, as the run's own total has.
                        first = self.first or snapshot
                        self._replica_totals[address] = {model: {} for model in first.models}

    def total_delta(self) -> dict[str, ModelDelta]:
        """First snapshot to last, summed interval by interval (restart-safe). {} without snapshots.

        What the old server did between its last snapshot and a restart is not known (see restarts).
        """
        return {model: delta_of_counters(counters) for model, counters in self._totals.items()}

    def replica_deltas(self) -> dict[str, dict[str, ModelDelta]]:
        """{address: {model: ModelDelta}} over the whole run, per replica ({} for one server)."""
        return {
            address: {model: delta_of_counters(counters) for model, counters in totals.items()}
            for address, totals in self._replica_totals.items()
        }


def fold(snapshots: list[StatsSnapshot]) -> SnapshotSeries:
    """A list of snapshots (oldest first) folded: for tests and one-off sums over a saved run."""
    series = SnapshotSeries()
    for snapshot in snapshots:
        series.add(snapshot)
    return series


_COMPACT = (",", ":")


class ServerStatsLog:
    """Appends each snapshot and the interval it closes to the run directory's two JSON-lines files.

    Example:
        log = ServerStatsLog(run_dir)
        log.write(snapshot, series.add(snapshot))
        log.close()
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._snapshots: IO[str] = open(self.directory / SERVER_SNAPSHOTS_JSONL, "w", encoding="utf-8")  # noqa: SIM115
        self._intervals: IO[str] = open(self.directory / SERVER_INTERVALS_JSONL, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, snapshot: StatsSnapshot, interval: Interval | None) -> None:
        self._snapshots.write(json.dumps(snapshot.to_json(), separators=_COMPACT) + "\n")
        self._snapshots.flush()
        if interval is not None:
            start_s, end_s, deltas = interval
            line = {"start_s": start_s, "end_s": end_s, "models": deltas_json(deltas)}
            self._intervals.write(json.dumps(line, separators=_COMPACT) + "\n")
            self._intervals.flush()

    def close(self) -> None:
        self._snapshots.close()
        self._intervals.close()


def server_stats_document(
    http_address: str,
    models: list[str],
    interval_s: float,
    series: SnapshotSeries,
    errors: list[dict[str, Any]],
    errors_dropped: int,
    streamed: bool,
) -> dict[str, Any]:
    """The content of server_stats.json; `streamed` when the two JSON-lines files were written."""
    files = {"snapshots_file": SERVER_SNAPSHOTS_JSONL, "intervals_file": SERVER_INTERVALS_JSONL} if streamed else {}
    return {
        "http_address": http_address,
        "models": models,
        "interval_s": interval_s,
        "snapshot_count": series.count,
        **files,
        "deltas": {"total": deltas_json(series.total_delta())},
        "restarts": series.restarts,
        "errors": errors,
        "errors_dropped": errors_dropped,
    }
