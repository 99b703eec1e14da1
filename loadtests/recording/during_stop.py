"""The requests of one endpoint that ended during the test's stop.

The stop begins at Locust's `test_stopping` in the process that runs the users (STOP in the
web UI, the end of `-t`, a load shape's end, Ctrl-C; on a worker, when the master's stop
reaches it). Its users then finish the request they have in flight, for up to the stop grace
(loadtests/run/stopping.py); one still in flight at the grace's end is cut as `interrupted`.
Those requests are counted like every other (the totals, the histograms, the windows): this is
a label beside them, so a report can say that a max latency came while the test was stopping.

Three numbers per endpoint and window, merged on the master as the counts are:

    tail = DuringStop()
    tail.record(None, 39_512)           # a success, its latency as the histogram records it (µs)
    tail.record("interrupted", 2_001_000)
    tail.to_message()                  # {"requests": 2, "failures": 1, "max_us": 39512}
"""

from __future__ import annotations

from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from loadtests.run_format.summary import DuringStopEntry


@dataclass
class DuringStop:
    requests: int = 0
    failures: int = 0
    # The slowest success among them, as recorded in the histogram (µs); 0 while none succeeded.
    max_us: int = 0

    def record(self, failure: str | None, latency_us: int) -> None:
        self.requests += 1
        if failure is None:
            self.max_us = max(self.max_us, latency_us)
        else:
            self.failures += 1

    def add(self, other: DuringStop) -> None:
        self.requests += other.requests
        self.failures += other.failures
        self.max_us = max(self.max_us, other.max_us)

    def add_message(self, message: dict | None) -> None:
        """Add a `to_message()` dict (a worker's window; absent from an older worker's)."""
        if message:
            self.add(DuringStop(int(message["requests"]), int(message["failures"]), int(message["max_us"])))

    @classmethod
    def from_message(cls, message: dict | None) -> DuringStop:
        tail = cls()
        tail.add_message(message)
        return tail

    def to_message(self) -> dict[str, int]:
        return {"requests": self.requests, "failures": self.failures, "max_us": self.max_us}

    def to_json(self, histogram: HdrHistogram) -> DuringStopEntry:
        """summary.json's `ended_during_stop` of an endpoint; the max as `histogram` (the endpoint's
        latencies) reports its own (hdrh's highest equivalent value), so the two compare equal
        when the endpoint's max latency is one of these requests'."""
        top = float(histogram.get_highest_equivalent_value(self.max_us)) if self.max_us else None
        return {"requests": self.requests, "failures": self.failures, "max_us": top}
