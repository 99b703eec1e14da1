"""Exact latencies per endpoint: HdrHistograms in microseconds, plus request counts.

Locust rounds response times (whole milliseconds under 100 ms), so its percentiles
cannot show Triton's sub-millisecond latencies. Every process that runs users keeps
one EndpointStats per endpoint; workers ship them to the master, which merges.
Memory is bounded: a histogram, not a list of samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 10 * 60 * 1_000_000  # 10 minutes
SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def clamp_us(latency_us: float) -> int:
    """HDR records integers in its range; a sub-microsecond or >10 min value is clamped, not lost."""
    return min(HIGHEST_US, max(LOWEST_US, round(latency_us)))


@dataclass
class EndpointStats:
    """Counts and latency histogram of one endpoint (model, protocol).

    Example:
        stats = EndpointStats("resnet50 [grpc]", "resnet50", "grpc")
        stats.record(latency_us=850.2, batch_size=4, failure=None)
    """

    name: str
    model: str
    protocol: str
    requests: int = 0
    inferences: int = 0
    failures: Counter = field(default_factory=Counter)
    histogram: HdrHistogram = field(default_factory=new_histogram)

    def record(self, latency_us: float, batch_size: int, failure: str | None) -> None:
        self.requests += 1
        if failure is None:
            # Only successful requests count as inferences, as Triton's inference_count does.
            self.inferences += batch_size
            self.histogram.record_value(clamp_us(latency_us))
        else:
            self.failures[failure] += 1

    @property
    def failure_count(self) -> int:
        return sum(self.failures.values())

    def merge(self, other: EndpointStats) -> None:
        self.requests += other.requests
        self.inferences += other.inferences
        self.failures.update(other.failures)
        self.histogram.add(other.histogram)

    def to_message(self) -> dict:
        """A msgpack-friendly dict for Locust's worker report."""
        return {
            "name": self.name,
            "model": self.model,
            "protocol": self.protocol,
            "requests": self.requests,
            "inferences": self.inferences,
            "failures": dict(self.failures),
            "histogram": self.histogram.encode().decode("ascii"),
        }

    @classmethod
    def from_message(cls, message: dict) -> EndpointStats:
        histogram = new_histogram()
        histogram.add(HdrHistogram.decode(message["histogram"].encode("ascii")))
        return cls(
            name=message["name"],
            model=message["model"],
            protocol=message["protocol"],
            requests=int(message["requests"]),
            inferences=int(message["inferences"]),
            failures=Counter(message["failures"]),
            histogram=histogram,
        )

    def latency_summary_us(self) -> dict[str, float]:
        """p50/p90/p95/p99/p99.9/max/mean in microseconds, from the histogram (successes only)."""
        h = self.histogram
        if h.get_total_count() == 0:
            return {key: 0.0 for key in ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")}
        summary = {f"p{p:g}": float(h.get_value_at_percentile(p)) for p in PERCENTILES}
        summary["max"] = float(h.get_max_value())
        summary["mean"] = round(float(h.get_mean_value()), 3)
        return summary
