"""Stalls of the load generator's own process: stretches in which none of its greenlets ran.

A Locust process sends, times and records everything on one gevent loop. When the kernel
does not schedule the process (a host with more runnable threads than cores, a frozen or
swapped-out container) or one greenlet holds the loop with CPU work, nothing else runs:
no request is sent, a response that arrived waits unread (its latency grows by the stall),
and a load shape's tick comes late, so a step can start late or not at all. The latencies
and the steps then describe the load generator, not Triton.

A greenlet of the meter asks to wake every `interval_s`; when it wakes later than that by
`threshold_s` or more, the process was stalled for that long. Each stall is kept as
(from, to) in Unix seconds; the run puts them in summary.json's
`faults.load_generator_stalled` (workers ship theirs with their reports), and the end of the
run and the report say so.

    meter = StallMeter()
    meter.start()
    ...
    meter.take()  # [(1795700931.2, 1795700933.4)]: stalls since the last take
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gevent

# A late wake-up this long is a stall (a busy but healthy loop is late by milliseconds).
STALL_S = 0.5
INTERVAL_S = 0.1


class StallMeter:
    """Watches this process's gevent loop for late wake-ups (a greenlet of its own)."""

    def __init__(
        self,
        threshold_s: float = STALL_S,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.threshold_s = threshold_s
        self.interval_s = interval_s
        self._clock = clock
        self._wall = wall
        self._stalls: list[tuple[float, float]] = []
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        """Start watching (once per process; later calls do nothing)."""
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._watch)

    def _watch(self) -> None:
        while True:
            before = self._clock()
            gevent.sleep(self.interval_s)
            self.woke(self._clock() - before)

    def woke(self, slept_s: float) -> None:
        """A wake-up after `slept_s` (asked: `interval_s`): a stall if it came that much late."""
        late_s = slept_s - self.interval_s
        if late_s >= self.threshold_s:
            now = self._wall()
            self._stalls.append((now - late_s, now))

    def take(self) -> list[tuple[float, float]]:
        """The stalls since the last call, (from, to) in Unix seconds."""
        stalls, self._stalls = self._stalls, []
        return stalls
