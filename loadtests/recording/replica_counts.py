"""Which Triton replica each request went to: counts per replica address, for one endpoint.

Three counters per replica (requests, failures, and the successes' latency sum, for a mean)
instead of a histogram per replica: a dictionary increment per request, and a few numbers
per replica in each worker's window message, whatever the run's length.

    counts = ReplicaCounts()
    counts.record("10.4.0.7:8001", failure=None, latency_us=850.0)
    counts.to_json()  # {"10.4.0.7:8001": {"requests": 1, "failures": 0, "mean_latency_us": 850.0}}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class ReplicaCounts:
    requests: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    latency_us: Counter = field(default_factory=Counter)  # the sum over successful requests

    def record(self, replica: str, failure: str | None, latency_us: float) -> None:
        self.requests[replica] += 1
        if failure is None:
            self.latency_us[replica] += latency_us
        else:
            self.failures[replica] += 1

    def add(self, other: ReplicaCounts) -> None:
        self.requests.update(other.requests)
        self.failures.update(other.failures)
        self.latency_us.update(other.latency_us)

    def add_message(self, message: dict | None) -> None:
        """Add a `to_message()` dict (a worker's window), as `add` adds an object."""
        if message:
            self.requests.update(message.get("requests", {}))
            self.failures.update(message.get("failures", {}))
            self.latency_us.update(message.get("latency_us", {}))

    def to_message(self) -> dict | None:
        """For the worker report (None when no request named a replica)."""
        if not self.requests:
            return None
        return {"requests": dict(self.requests), "failures": dict(self.failures), "latency_us": dict(self.latency_us)}

    @classmethod
    def from_message(cls, message: dict | None) -> ReplicaCounts:
        counts = cls()
        counts.add_message(message)
        return counts

    def to_json(self) -> dict[str, dict]:
        """summary.json's per-endpoint `replicas`: {address: {requests, failures, mean_latency_us}}."""
        out = {}
        for replica in sorted(self.requests):
            successes = self.requests[replica] - self.failures[replica]
            mean = self.latency_us[replica] / successes if successes else 0.0
            out[replica] = {
                "requests": self.requests[replica],
                "failures": self.failures[replica],
                "mean_latency_us": round(mean, 1),
            }
        return out
