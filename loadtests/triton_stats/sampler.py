"""A sample taken now, every few seconds in a gevent greenlet, and once more at the stop.

Shared by both pollers of Triton's side (poller.py and metrics.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent.lock import RLock

from loadtests.errors import ServerError

DEFAULT_INTERVAL_S = 5.0
# How long stop() waits for samples still in flight from sample_soon() before its own last one.
PENDING_WAIT_S = 2.0
# A server unreachable for a whole hour at 5 s is 720 errors; keep the first ones, count the rest.
MAX_RECORDED_ERRORS = 100


class PeriodicSampler:
    """Calls `sample()` now, every `interval_s` in a gevent greenlet, and once more at stop.

    A ServerError from `sample` (Triton unreachable, a model unloaded) is recorded in
    `errors` and the next tick tries again: a load test must not die because a scrape did.
    Other exceptions are bugs and end the greenlet loudly. Shared by both pollers.

    One sample at a time, whoever asks (the periodic greenlet, a step boundary's sample_soon, a
    sweep's boundary through sample_now): each is read and kept before the next is asked, so they
    are kept in the order Triton read them. Side by side, a late answer was kept after one asked
    later, the counters seemed to go down, and the run took it for a restart.

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
        # The last failure's time (this clock), past the cap too.
        self.last_error_s: float | None = None
        self._greenlet: gevent.Greenlet | None = None
        self._pending: list[gevent.Greenlet] = []  # sample_soon()'s, not finished yet
        self._stopped = False
        # Reentrant: a listener of the snapshot it keeps (server_snapshot_taken) may ask for one.
        self._one_at_a_time = RLock()

    def sample_now(self) -> None:
        """A sample now, or as soon as the one in flight is kept."""
        with self._one_at_a_time:
            self._sample_alone()

    def _sample_alone(self) -> None:
        if self.before_tick is not None:
            self.before_tick()
        try:
            self._sample()
        except ServerError as exc:
            self.record_error(str(exc))

    def sample_soon(self) -> None:
        """`sample_now` in a greenlet of its own, for a caller that must not wait for the server
        (a load shape's step boundary); stop() lets it land before the last sample."""
        self._pending = [greenlet for greenlet in self._pending if not greenlet.dead]
        self._pending.append(gevent.spawn(self.sample_now))

    def record_error(self, error: str) -> None:
        """A failed sample (or one replica's part of a sample), kept up to MAX_RECORDED_ERRORS."""
        self.last_error_s = now = self.clock()
        if len(self.errors) < MAX_RECORDED_ERRORS:
            self.errors.append({"time_s": now, "error": error})
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
        # A sample still in flight would otherwise land after the last one: out of order, or
        # into the files the run has closed. One that outlasts the wait is dropped.
        gevent.joinall(self._pending, timeout=PENDING_WAIT_S)
        gevent.killall(self._pending, block=True)
        self._pending = []
        # A sample_now of another greenlet's (a sweep's boundary) may still be in flight: the last
        # sample waits for it as long, then goes ahead (a frozen Triton must not hold up the end).
        if self._one_at_a_time.acquire(timeout=PENDING_WAIT_S):
            try:
                self._sample_alone()
            finally:
                self._one_at_a_time.release()
        else:
            self._sample_alone()

    @property
    def running(self) -> bool:
        return self._greenlet is not None and not self._greenlet.dead
