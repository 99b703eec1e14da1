"""Exact latencies per endpoint: HdrHistograms in microseconds, plus request counts.

Locust rounds response times (whole milliseconds under 100 ms), so its percentiles
cannot show Triton's sub-millisecond latencies. Every process that runs users keeps
one EndpointStats per endpoint; workers ship them to the master, which merges.
Memory is bounded: a histogram, not a list of samples.

Open-loop traffic (loadtests/traffic/open_loop.py) records two latencies per request:
`histogram` holds the corrected one (from the intended send time) and `uncorrected` the
one from the actual send; `late` counts requests sent more than 1 ms after their
intended time and `dropped` those never sent (not counted in `requests`).

One request arrives as the client's RequestOutcome (clients/outcome.py), whole.
A process's recorder (windows.WindowRecorder) records with `hold`: counts at once, latencies
in a list that `fold` adds to the histograms in one numpy pass when the window is drained
(batched_hdr.py; measured with `python -m bench.request_event`).

Endpoints merged, the whole run ("overall") or one model's endpoints, come from the exact
totals: counts add up, percentiles do not, so the merge is of the HdrHistograms themselves.
At the run's end they are merged once (`RunTotals`) and handed on:

    totals = RunTotals.of(run.aggregator.totals)
    totals.overall.latency_summary_us()["p99"]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from loadtests.clients.failures import sent
from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.batched_hdr import counts_below, record_values
from loadtests.recording.during_stop import DuringStop
from loadtests.recording.histogram_merge import EncodedAdder
from loadtests.recording.replica_counts import ReplicaCounts
from loadtests.recording.stream_stats import StreamStats

# The histogram range, its summary and intervals are the run-directory format's (shared with the reports).
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE, percentile_bounds_us
from loadtests.run_format.hdr import HIGHEST_US, LOWEST_US, new_histogram, summarise_us, zero_summary
from loadtests.run_format.summary import OVERALL

# Held latencies are folded into the histograms at least this often (a bound on the list, about
# two seconds at 2,000 requests/s; a recorder is drained every 1-3 s anyway).
FOLD_EVERY = 4096


def clamp_us(latency_us: float) -> int:
    """HDR records integers in its range; a sub-microsecond or >10 min value is clamped, not lost."""
    return min(HIGHEST_US, max(LOWEST_US, round(latency_us)))


@dataclass
class EndpointStats:
    """Counts and latency histogram of one endpoint (model, protocol).

    Example:
        stats = EndpointStats("resnet50 [grpc]", "resnet50", "grpc")
        stats.record(RequestOutcome("resnet50 [grpc]", "resnet50", "grpc", latency_us=850.2, batch_size=4))
    """

    name: str
    model: str
    protocol: str
    requests: int = 0
    inferences: int = 0
    failures: Counter = field(default_factory=Counter)
    histogram: HdrHistogram = field(default_factory=new_histogram)
    # Open-loop only (None in closed loop, so closed-loop windows stay one histogram each).
    uncorrected: HdrHistogram | None = None
    late: int = 0
    dropped: int = 0
    # Request and response bodies on the wire (HTTP bodies, gRPC messages), every request.
    bytes_sent: int = 0
    bytes_received: int = 0
    # Requests sent per batch size, failures included: the mix the client asked Triton for,
    # to set beside the batches Triton executed (summary.json's requested_batch_sizes).
    batch_sizes: Counter = field(default_factory=Counter)
    # Sequence users only: sequences started, and how they ended ("completed", "failed",
    # "ended_early"): summary.json's sequences_* counts (run_format.summary.SEQUENCE_COUNTS).
    sequences: Counter = field(default_factory=Counter)
    # Requests per Triton replica (several --triton-http/--triton-grpc addresses).
    replicas: ReplicaCounts = field(default_factory=ReplicaCounts)
    # A streamed endpoint's response timings (a decoupled model over gRPC); None: not streamed.
    stream: StreamStats | None = None
    # The requests that ended after the test's stop began (during_stop.py), counted above too.
    during_stop: DuringStop = field(default_factory=DuringStop)

    # Latencies held back by `hold` (a recorder's requests), added to the histograms by `fold`.
    held: list[float] = field(default_factory=list, init=False, repr=False, compare=False)
    held_uncorrected: list[float] = field(default_factory=list, init=False, repr=False, compare=False)

    def record(self, outcome: RequestOutcome) -> None:
        """One request, its latencies added to the histograms at once."""
        if self._count(outcome):
            self.histogram.record_value(clamp_us(outcome.latency_us))
            if outcome.uncorrected_us is not None:
                if self.uncorrected is None:
                    self.uncorrected = new_histogram()
                self.uncorrected.record_value(clamp_us(outcome.uncorrected_us))

    def hold(self, outcome: RequestOutcome) -> None:
        """`record`, with the latencies kept in a list until `fold` adds them in one numpy pass
        (the request path's cheapest form: recording/batched_hdr.py). Counts are current at
        once; the histograms are after `fold`, which every method reading them calls."""
        if self._count(outcome):
            self.held.append(outcome.latency_us)
            if outcome.uncorrected_us is not None:
                self.held_uncorrected.append(outcome.uncorrected_us)
            if len(self.held) >= FOLD_EVERY:
                self.fold()

    def successes_faster_than(self, bounds_us: list[float]) -> list[int]:
        """Per bound, the successes whose latency was surely below it (batched_hdr.counts_below)."""
        self.fold()
        return counts_below(self.histogram, bounds_us)

    def ended_during_stop(self, outcome: RequestOutcome) -> None:
        """A request recorded (`hold` or `record`) after the test's stop began, labelled as such."""
        self.during_stop.record(outcome.failure, clamp_us(outcome.latency_us))

    def fold(self) -> None:
        """Add the held latencies to the histograms."""
        if self.stream is not None:
            self.stream.fold()
        if self.held:
            record_values(self.histogram, self.held)
            self.held = []
        if self.held_uncorrected:
            if self.uncorrected is None:
                self.uncorrected = new_histogram()
            record_values(self.uncorrected, self.held_uncorrected)
            self.held_uncorrected = []

    def _count(self, outcome: RequestOutcome) -> bool:
        """Everything of a request but its latencies; True if it succeeded (its latencies count)."""
        # One unpacking of the tuple (the request path): cheaper than an attribute read per field.
        (
            _,
            _,
            _,
            latency_us,
            batch_size,
            failure,
            _,
            late,
            sent_bytes,
            received_bytes,
            started,
            ended,
            replica,
            stream,
            _,
        ) = outcome
        self.requests += 1
        self.batch_sizes[batch_size] += 1
        if failure is None or sent(failure):  # a refused connection put nothing on the wire
            self.bytes_sent += sent_bytes
            self.bytes_received += received_bytes
        if late:
            self.late += 1
        if started:  # a sequence user's start and outcome
            self.sequences["started"] += 1
        if ended is not None:
            self.sequences[ended] += 1
        if replica is not None:  # the replica it went to
            self.replicas.record(replica, failure, latency_us)
        if failure is None:
            # Only successful requests count as inferences, as Triton's inference_count does.
            self.inferences += batch_size
            if stream is not None:
                if self.stream is None:
                    self.stream = StreamStats()
                self.stream.hold(stream)
            return True
        self.failures[failure] += 1
        return False

    def record_dropped(self) -> None:
        self.dropped += 1

    @property
    def failure_count(self) -> int:
        return sum(self.failures.values())

    def merge(self, other: EndpointStats) -> None:
        self.fold()
        other.fold()
        self.requests += other.requests
        self.inferences += other.inferences
        self.failures.update(other.failures)
        self.batch_sizes.update(other.batch_sizes)
        self.sequences.update(other.sequences)
        self.histogram.add(other.histogram)
        self.late += other.late
        self.dropped += other.dropped
        self.bytes_sent += other.bytes_sent
        self.bytes_received += other.bytes_received
        self.replicas.add(other.replicas)
        self.during_stop.add(other.during_stop)
        if other.stream is not None:
            if self.stream is None:
                self.stream = StreamStats()
            self.stream.merge(other.stream)
        if other.uncorrected is not None:
            if self.uncorrected is None:
                self.uncorrected = new_histogram()
            self.uncorrected.add(other.uncorrected)

    def release(self) -> None:
        """Free the histograms' counts as soon as this object is dropped; call it when done with one.

        Still readable afterwards (counts, percentiles, merging it into another), but it can no
        longer be encoded or merged into. See release_histogram.
        """
        self.fold()
        release_histogram(self.histogram)
        release_histogram(self.uncorrected)

    def to_message(self) -> dict:
        """A msgpack-friendly dict for Locust's worker report."""
        self.fold()
        return {
            "name": self.name,
            "model": self.model,
            "protocol": self.protocol,
            "requests": self.requests,
            "inferences": self.inferences,
            "failures": dict(self.failures),
            "histogram": self.histogram.encode().decode("ascii"),
            "uncorrected": self.uncorrected.encode().decode("ascii") if self.uncorrected is not None else None,
            "late": self.late,
            "dropped": self.dropped,
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            # String keys: a message map is decoded with string keys only.
            "batch_sizes": {str(size): count for size, count in self.batch_sizes.items()},
            "sequences": dict(self.sequences),
            "replicas": self.replicas.to_message(),
            "stream": self.stream.to_message() if self.stream is not None else None,
            "during_stop": self.during_stop.to_message(),
        }

    @classmethod
    def from_message(cls, message: dict) -> EndpointStats:
        uncorrected = message.get("uncorrected")
        return cls(
            name=message["name"],
            model=message["model"],
            protocol=message["protocol"],
            requests=int(message["requests"]),
            inferences=int(message["inferences"]),
            failures=Counter(message["failures"]),
            histogram=_decode(message["histogram"]),
            uncorrected=_decode(uncorrected) if uncorrected else None,
            late=int(message.get("late", 0)),
            dropped=int(message.get("dropped", 0)),
            bytes_sent=int(message.get("bytes_sent", 0)),
            bytes_received=int(message.get("bytes_received", 0)),
            batch_sizes=Counter({int(size): int(count) for size, count in message.get("batch_sizes", {}).items()}),
            sequences=Counter(message.get("sequences", {})),
            replicas=ReplicaCounts.from_message(message.get("replicas")),
            stream=StreamStats.from_message(message["stream"]) if message.get("stream") else None,
            during_stop=DuringStop.from_message(message.get("during_stop")),
        )

    def latency_summary_us(self) -> dict[str, float]:
        """p50/p90/p95/p99/p99.9/max/mean in microseconds, from the histogram (successes only)."""
        self.fold()
        return summarise_us(self.histogram) or zero_summary()

    def histogram_of(self, variant: str = "") -> HdrHistogram | None:
        """The histogram an SLO clause's metric is read from (run_format.slo.stream_variant):
        "" the latency, "first_response" or "gap" the stream's (None: nothing streamed)."""
        self.fold()
        if not variant:
            return self.histogram
        return None if self.stream is None else getattr(self.stream, variant)

    def stream_json(self, latency_us: dict, duration_s: float) -> dict | None:
        """summary.json's `stream` object of this endpoint (or merged entry, or capacity level):
        its streamed requests' timings, the time to the final response (`latency_us`, the entry's
        own: a streamed request ends at its final response) and responses per second; None when
        nothing streamed. The one builder of that object (run_dir.py, the SLO gate, capacity levels)."""
        if self.stream is None:
            return None
        stream = self.stream.summary()
        stream["final_response_us"] = latency_us
        stream["responses_per_s"] = round(stream["responses"] / duration_s, 3) if duration_s > 0 else 0.0
        return stream

    def latency_ci_us(self, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, list[float | None]]:
        """[lower, upper] µs per percentile at this confidence (loadtests/run_format/confidence.py); {} if empty."""
        self.fold()
        return percentile_bounds_us(self.histogram, confidence)

    def uncorrected_summary_us(self) -> dict[str, float] | None:
        """The same from the actual send time (open loop only)."""
        self.fold()
        if self.uncorrected is None:
            return None
        return summarise_us(self.uncorrected) or zero_summary()


def merge_stats(stats: Iterable[EndpointStats], name: str) -> EndpointStats:
    """A new EndpointStats holding the sum of `stats` (which are left unchanged)."""
    stats = list(stats)
    models = {s.model for s in stats}
    protocols = {s.protocol for s in stats}
    merged = EndpointStats(
        name,
        model=models.pop() if len(models) == 1 else "*",
        protocol=protocols.pop() if len(protocols) == 1 else "*",
    )
    for one in stats:
        merged.merge(one)
    return merged


@dataclass(frozen=True)
class RunTotals:
    """The run's exact totals at its end, merged once where they are recorded, then handed to
    summary.json (run_dir.py), the --slo gate and the console: each endpoint, each model's
    endpoints together, and the whole run (`overall`).

        totals = RunTotals.of(run.aggregator.totals)
        totals.overall.latency_summary_us()["p99"]; totals.histogram_for("identity", "")
    """

    endpoints: dict[str, EndpointStats]
    models: dict[str, EndpointStats]  # a model's endpoints merged (a model with one: that endpoint's)
    overall: EndpointStats

    @classmethod
    def of(cls, totals: dict[str, EndpointStats]) -> RunTotals:
        groups = model_groups(totals)
        models = {model: group[0] if len(group) == 1 else merge_stats(group, model) for model, group in groups.items()}
        return cls(dict(totals), models, merge_stats(totals.values(), OVERALL))

    def shared_models(self) -> dict[str, EndpointStats]:
        """The models with more than one endpoint (e.g. HTTP and gRPC): summary.json's model_totals."""
        counts = Counter(stats.model for stats in self.endpoints.values())
        return {model: stats for model, stats in self.models.items() if counts[model] > 1}

    def stats_for(self, target: str | None) -> EndpointStats | None:
        """An endpoint's, a model's (its endpoints merged) or, for None, the whole run's; None: no such target."""
        if target is None:
            return self.overall
        if target in self.endpoints:
            return self.endpoints[target]
        return self.models.get(target)

    def release(self) -> None:
        """Free the merged histograms (not the endpoints' own) when done: see EndpointStats.release."""
        for stats in (self.overall, *self.shared_models().values()):
            stats.release()

    def histogram_for(self, target: str | None, variant: str = "") -> HdrHistogram | None:
        """The histogram an --slo clause reads (loadtests.run_format.slo.evaluate): its target's
        latency ("") or streamed "first_response" / "gap"; None when the target has none."""
        stats = self.stats_for(target)
        return None if stats is None else stats.histogram_of(variant)


def by_model(totals: dict[str, EndpointStats]) -> dict[str, EndpointStats]:
    """One merged EndpointStats per model that has more than one endpoint (e.g. HTTP and gRPC)."""
    return {model: merge_stats(group, model) for model, group in model_groups(totals).items() if len(group) > 1}


def model_groups(totals: dict[str, EndpointStats]) -> dict[str, list[EndpointStats]]:
    """Each model's endpoints, models in name order."""
    groups: dict[str, list[EndpointStats]] = {}
    for stats in totals.values():
        groups.setdefault(stats.model, []).append(stats)
    return dict(sorted(groups.items()))


def release_histogram(histogram: HdrHistogram | None) -> None:
    """Break hdrh's reference cycle (a histogram and its encoder refer to each other), so that the
    histogram's counts array (86-170 KB) is freed when its last reference goes, not at the garbage
    collector's next full collection. Those are rare in a process with many long-lived objects:
    between two of them a soak's master kept every histogram it had decoded and merged (85 MB
    in 30 minutes at 500 requests/s from 2 workers; tracemalloc named new_histogram's counts).

    Only the encoder's back-reference goes: the histogram stays readable (counts, percentiles)
    and can still be added into another one, but can no longer be encoded or added to."""
    if histogram is not None:
        histogram.encoder.histogram = None


def add_message(message: dict, targets: list[EndpointStats], adder: EncodedAdder) -> None:
    """Add one drained message (`to_message()`) into each target, decoding its histograms once:
    the master's merge of a worker's window into the window and the run's total alike
    (the same result as `target.merge(EndpointStats.from_message(message))`, for less CPU)."""
    failures = message["failures"]
    batch_sizes = {int(size): int(count) for size, count in message.get("batch_sizes", {}).items()}
    sequences = message.get("sequences")
    for target in targets:
        target.requests += int(message["requests"])
        target.inferences += int(message["inferences"])
        if failures:
            target.failures.update(failures)
        target.batch_sizes.update(batch_sizes)
        if sequences:
            target.sequences.update(sequences)
        target.late += int(message.get("late", 0))
        target.dropped += int(message.get("dropped", 0))
        target.bytes_sent += int(message.get("bytes_sent", 0))
        target.bytes_received += int(message.get("bytes_received", 0))
        target.replicas.add_message(message.get("replicas"))
        target.during_stop.add_message(message.get("during_stop"))
        if message.get("stream"):
            if target.stream is None:
                target.stream = StreamStats()
            target.stream.add_message(message["stream"], adder)
    adder.add(message["histogram"], [target.histogram for target in targets])
    uncorrected = message.get("uncorrected")
    if uncorrected:
        for target in targets:
            if target.uncorrected is None:
                target.uncorrected = new_histogram()
        adder.add(uncorrected, [target.uncorrected for target in targets])


def _decode(encoded: str) -> HdrHistogram:
    # Decoded histograms are re-added to one of our own range, so merges never overflow.
    histogram = new_histogram()
    decoded = HdrHistogram.decode(encoded.encode("ascii"))
    histogram.add(decoded)
    release_histogram(decoded)
    return histogram
