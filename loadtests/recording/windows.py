"""Time windows: every process records per (window, endpoint); the master merges and closes them.

    process that runs users          master (or the single process)
    WindowRecorder.record()   --->   RunAggregator.merge(messages)
      drain() every report            totals per endpoint (whole run)
      (workers: Locust's worker       open windows, closed after a grace period
       report; single process:          -> WindowSink (timeseries.csv, HDR logs)
       a local greenlet)

Windows are keyed by absolute time (epoch seconds // window length), so all processes
agree on them without a shared start. A window stays open on the master for a grace
period (late worker reports), or until every live worker has drained past it (a worker keys
its records and its drain time on one clock, so after a drain at d all it records falls in
windows from d's on), then is written out and dropped: memory stays bounded
whatever the run length (a histogram is ~170 KB; only open windows and totals are kept). What is
dropped (a shipped or merged window, a closed one) is released at once: hdrh's histograms sit in a
reference cycle, and would otherwise wait for a rare full garbage collection (histograms.py).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection
from typing import Protocol

from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.histogram_merge import EncodedAdder
from loadtests.recording.histograms import EndpointStats, add_message

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 1.0
# Locust workers report every 3 s; a window is final once every report that could hold it is in.
DEFAULT_GRACE_S = 8.0


def window_key(now_s: float, window_s: float) -> int:
    return math.floor(now_s / window_s)


class WindowRecorder:
    """Per-process recording, drained into messages (what workers ship to the master)."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S, clock: Callable[[], float] = time.time) -> None:
        self.window_s = window_s
        self.clock = clock
        self.pending: dict[int, dict[str, EndpointStats]] = {}
        # When the test's stop began (this clock), until the next test starts; None while it runs.
        self.stop_began_s: float | None = None

    def record(self, outcome: RequestOutcome) -> None:
        """One request, into its endpoint's stats in the window that holds now (after the stop
        began, also labelled as one that ended during the stop)."""
        stats = self._stats(outcome)
        stats.hold(outcome)
        if self.stop_began_s is not None:
            stats.ended_during_stop(outcome)

    def stop_began(self) -> None:
        """The test's stop began (Locust's test_stopping in this process): every request recorded
        from now on ended during the stop (EndpointStats.during_stop), until `test_started`."""
        if self.stop_began_s is None:
            self.stop_began_s = self.clock()

    def test_started(self) -> None:
        """A test starts (again, from the web UI): its requests end before its stop."""
        self.stop_began_s = None

    def record_dropped(self, name: str, model: str, protocol: str) -> None:
        """An open-loop request that was due but not sent (--drop-when-saturated)."""
        self._stats((name, model, protocol)).record_dropped()

    def _stats(self, endpoint: tuple) -> EndpointStats:
        """The stats of `endpoint` (name, model, protocol: an outcome's first three fields) in
        the window that holds now; by index, not by field name (the request path)."""
        key = window_key(self.clock(), self.window_s)
        window = self.pending.get(key)
        if window is None:
            window = self.pending[key] = {}
        stats = window.get(endpoint[0])
        if stats is None:
            stats = window[endpoint[0]] = EndpointStats(endpoint[0], endpoint[1], endpoint[2])
        return stats

    def drain(self) -> list[dict]:
        """Everything recorded since the last drain, as msgpack-friendly messages."""
        messages = [
            {"window": key, **stats.to_message()} for key, window in self.pending.items() for stats in window.values()
        ]
        for window in self.pending.values():
            for stats in window.values():
                stats.release()  # shipped: freed now, not at a full garbage collection
        self.pending = {}
        return messages


class WindowSink(Protocol):
    def write_window(
        self,
        start_s: float,
        window_s: float,
        endpoints: dict[str, EndpointStats],
        users: int,
        target_rate: float | None = None,
        users_by_class: dict[str, int] | None = None,
    ) -> None:
        """Called once per closed window, in time order (target_rate: open-loop traffic only;
        users is the total over the user classes, users_by_class each class's count)."""


class RunAggregator:
    """Merges drained messages on the master: run totals, and windows closed in time order."""

    def __init__(
        self,
        window_s: float = DEFAULT_WINDOW_S,
        grace_s: float = DEFAULT_GRACE_S,
        sink: WindowSink | None = None,
        clock: Callable[[], float] = time.time,
        started_s: float | None = None,
        on_closed: Callable[[float, float, dict[str, EndpointStats]], None] | None = None,
    ) -> None:
        self.window_s = window_s
        self.grace_s = grace_s
        # The run's start (Unix s): windows from here on are written even when nothing completed.
        self.started_s = started_s
        self.sink = sink
        self.clock = clock
        self.totals: dict[str, EndpointStats] = {}
        self.open: dict[int, dict[str, EndpointStats]] = {}
        self.users: dict[int, int] = {}
        self.rates: dict[int, float | None] = {}
        self.users_by_class: dict[int, dict[str, int] | None] = {}
        self.last_closed: int | None = None
        self.last_window: dict[str, EndpointStats] = {}
        self.late_messages = 0
        # Each worker's last drain (its own clock, Unix s): windows before it are complete for it.
        self.drained: dict[str, float] = {}
        # Called as each window closes, after the sink: (start_s, end_s, endpoints). The run
        # wiring fires the suite's `window_closed` event from it (loadtests/events.py).
        self.on_closed = on_closed
        # Decodes workers' histograms into one reused buffer (recording/histogram_merge.py).
        self.adder = EncodedAdder()

    def note_users(self, count: int, target_rate: float | None = None, by_class: dict[str, int] | None = None) -> None:
        """The user count (the total over the classes, and each class's count) and the
        open-loop target rate now, for the window that holds now."""
        key = window_key(self.clock(), self.window_s)
        self.users[key] = count
        self.rates[key] = target_rate
        self.users_by_class[key] = dict(by_class) if by_class is not None else None

    def merge(self, messages: list[dict]) -> None:
        for message in messages:
            name = message["name"]
            total = self.totals.get(name)
            if total is None:
                total = self.totals[name] = EndpointStats(name, message["model"], message["protocol"])
            targets = [total]
            key = int(message["window"])
            if self.last_closed is not None and key <= self.last_closed:
                # Arrived after its window was written: counted in the totals, not in the series.
                self.late_messages += 1
            else:
                window = self.open.setdefault(key, {})
                stats = window.get(name)
                if stats is None:
                    stats = window[name] = EndpointStats(name, message["model"], message["protocol"])
                targets.append(stats)
            # Decoded once into a reused buffer and added to both (the master's largest cost
            # per worker report); no histogram is created per message, so none waits for the
            # garbage collector either.
            add_message(message, targets, self.adder)

    def note_drained(self, worker: str, at_s: float | None) -> None:
        """A worker drained its recorder at `at_s` (its clock) into the report just merged."""
        if at_s is not None:
            self.drained[worker] = max(at_s, self.drained.get(worker, at_s))

    def _limit(self, workers: Collection[str]) -> float:
        """The first window still open: the grace period's, or, when every live worker has
        drained since, the first window one of them may still add to."""
        now = self.clock()
        limit = window_key(now - self.grace_s, self.window_s)
        if workers and all(worker in self.drained for worker in workers):
            drained = min(window_key(self.drained[worker], self.window_s) for worker in workers)
            # Never the master's own current window (a worker's clock may run ahead of it).
            limit = max(limit, min(drained, window_key(now, self.window_s)))
        return limit

    def close_windows(self, final: bool = False, end_s: float | None = None, workers: Collection[str] = ()) -> None:
        """Write out every window older than the grace period, or that every one of `workers`
        (the live workers' ids; none in a single process) has drained past (all when final).

        A window in which nothing completed (a frozen or dead server) is written too, with
        zero requests for every endpoint seen so far, so an outage shows as one in
        timeseries.csv instead of a straight line between the windows around it. At the
        final close, `end_s` (the run's stop) is the last window to write.
        """
        limit = math.inf if final else self._limit(workers)
        keys = set(k for k in self.open if k < limit)
        if self.totals:
            first = self.last_closed + 1 if self.last_closed is not None else min(keys | {self._first_key()})
            last = window_key(end_s, self.window_s) if final and end_s is not None else limit - 1
            if math.isfinite(last):
                keys.update(range(first, int(last) + 1))
            elif keys:
                keys.update(range(first, max(keys)))
        for key in sorted(keys):
            endpoints = self.open.pop(key, None) or self._empty_window()
            for stats in self.last_window.values():
                stats.release()  # written and observed: freed now (see release_histogram)
            self.last_window = endpoints
            if self.sink is not None:
                self.sink.write_window(
                    key * self.window_s,
                    self.window_s,
                    endpoints,
                    _noted_at(self.users, key, 0),
                    target_rate=_noted_at(self.rates, key, None),
                    users_by_class=_noted_at(self.users_by_class, key, None),
                )
            self.last_closed = key
            if self.on_closed is not None:
                try:
                    self.on_closed(key * self.window_s, (key + 1) * self.window_s, endpoints)
                except Exception:  # a listener's bug must not stop the recording
                    logger.exception("window listener %r failed", self.on_closed)
        for key in [k for k in self.users if self.last_closed is not None and k < self.last_closed - 1]:
            del self.users[key]
            self.rates.pop(key, None)
            self.users_by_class.pop(key, None)

    def _first_key(self) -> int:
        """The run's first window: where the run started, or else the first window that has data."""
        if self.started_s is not None:
            return window_key(self.started_s, self.window_s)
        return min(self.open) if self.open else window_key(self.clock(), self.window_s)

    def _empty_window(self) -> dict[str, EndpointStats]:
        return {name: EndpointStats(name, total.model, total.protocol) for name, total in self.totals.items()}


def _noted_at(noted: dict, key: int, default):
    """The value noted in this window, else the nearest one noted (before, then after)."""
    if key in noted:
        return noted[key]
    earlier = [k for k in noted if k <= key]
    if earlier:
        return noted[max(earlier)]
    later = [k for k in noted if k > key]
    return noted[min(later)] if later else default
