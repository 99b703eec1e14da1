"""A streamed endpoint's response timings (decoupled models over gRPC), exact and mergeable.

Per successful streamed request (clients/outcome.StreamTimings): the time to its first
response with outputs (`first_response_us`), every gap between its responses
(`gap_us`), and how many responses it had (`responses`, an exact count per value). The time to
the final response is the endpoint's own latency histogram (a streamed request's latency ends
at its final response), so it is not kept twice. Held in lists on the request path, folded into
HDR histograms in one numpy pass (batched_hdr.py), shipped in the worker report and merged on
the master like the latencies (`EndpointStats.stream`).

    stats = StreamStats()
    stats.hold(StreamTimings(10_200.0, (20_000.0,), 30_400.0, 2)); stats.summary()["first_response_us"]["p50"]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from loadtests.clients.outcome import StreamTimings
from loadtests.recording.batched_hdr import record_values
from loadtests.recording.histogram_merge import EncodedAdder
from loadtests.run_format.hdr import new_histogram, summarise_us, zero_summary


@dataclass
class StreamStats:
    """Counts and histograms of one endpoint's streamed requests (successes only)."""

    requests: int = 0  # successful streamed requests
    first_response: HdrHistogram = field(default_factory=new_histogram)
    gap: HdrHistogram = field(default_factory=new_histogram)
    responses: Counter = field(default_factory=Counter)  # responses with outputs -> requests
    held_first: list[float] = field(default_factory=list, repr=False, compare=False)
    held_gaps: list[float] = field(default_factory=list, repr=False, compare=False)

    def hold(self, timings: StreamTimings) -> None:
        self.requests += 1
        self.responses[timings.responses] += 1
        if timings.first_us is not None:
            self.held_first.append(timings.first_us)
        if timings.gaps_us:
            self.held_gaps.extend(timings.gaps_us)

    def fold(self) -> None:
        if self.held_first:
            record_values(self.first_response, self.held_first)
            self.held_first = []
        if self.held_gaps:
            record_values(self.gap, self.held_gaps)
            self.held_gaps = []

    def merge(self, other: StreamStats) -> None:
        self.fold()
        other.fold()
        self.requests += other.requests
        self.responses.update(other.responses)
        self.first_response.add(other.first_response)
        self.gap.add(other.gap)

    def to_message(self) -> dict:
        self.fold()
        return {
            "requests": self.requests,
            "responses": {str(count): requests for count, requests in self.responses.items()},
            "first_response": self.first_response.encode().decode("ascii"),
            "gap": self.gap.encode().decode("ascii"),
        }

    def add_message(self, message: dict, adder: EncodedAdder) -> None:
        """A worker's `to_message()` added in (the master's merge)."""
        self.requests += int(message["requests"])
        self.responses.update({int(count): int(requests) for count, requests in message["responses"].items()})
        adder.add(message["first_response"], [self.first_response])
        adder.add(message["gap"], [self.gap])

    @classmethod
    def from_message(cls, message: dict) -> StreamStats:
        stats = cls()
        stats.add_message(message, EncodedAdder())
        return stats

    def summary(self) -> dict:
        """summary.json's `stream` object of an endpoint (µs; counts of responses with outputs)."""
        self.fold()
        total = sum(count * requests for count, requests in self.responses.items())
        return {
            "requests": self.requests,
            "responses": total,
            "responses_per_request": {
                "mean": total / self.requests if self.requests else 0.0,
                "min": min(self.responses, default=0),
                "max": max(self.responses, default=0),
            },
            "requests_without_response": self.responses.get(0, 0),
            "first_response_us": summarise_us(self.first_response) or zero_summary(),
            "gap_us": summarise_us(self.gap) or zero_summary(),
        }
