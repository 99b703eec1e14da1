"""Open-loop traffic: requests go out on a schedule of intended send times, whatever the server does.

    master (or the single process)              every process that runs users
    --rate R, or a kind=rate shape   ------->   OpenLoop: its share of R
      RatePlan(rate=R, users=U) message           share = R * local users / U
      (every second, and on each change)          ArrivalSchedule: due times, fixed,
                                                  exponential or gamma gaps at the share
                                                users take turns to wait for the next due
                                                time, then send it on a greenlet of their
                                                own with a pooled client (--max-in-flight)

Closed-loop users wait for each response, so a slow server slows the client down and the
requests that would have arrived meanwhile are never measured (coordinated omission).
Here a request's latency runs from its *intended* send time: when the server stalls, the
requests that pile up behind it carry the wait in their latency. The latency from the
actual send is kept too (uncorrected), so reports can show how much the two differ.

At the --max-in-flight cap a due request waits for a slot and goes out late (its wait is
in its corrected latency), or, with --drop-when-saturated, is dropped and counted. A
request sent more than 1 ms after its intended time is counted as late.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import gevent
import numpy as np
from gevent.lock import BoundedSemaphore, Semaphore

from loadtests.clients import TritonClient
from loadtests.traffic.timer import PreciseTimer

logger = logging.getLogger(__name__)

CONSTANT = "constant"
POISSON = "poisson"
# Gamma-distributed gaps with a chosen coefficient of variation (--burstiness): CV 1 is Poisson,
# above 1 requests come in bursts separated by lulls, below 1 they are more regular.
GAMMA = "gamma"
# While the rate is 0 (a shape at 0, or a worker before its first rate message), users poll.
PAUSED_POLL_S = 0.05
RATE_MESSAGE = "triton_loadtest_rate"
# Housekeeping in the same process (closing windows, scraping Triton) blocks the gevent loop
# for 1-6 ms; it waits until the next send is at least this far away (measured: at 50
# requests/s, 1-3 % of requests went out 1-8 ms late, each just as such work ran) ...
QUIET_NS = 8_000_000
# ... but not longer than this: at high rates there is no such gap, and it must run anyway.
MAX_QUIET_WAIT_S = 0.1


@dataclass(frozen=True)
class RatePlan:
    """The total target rate (requests/s, all workers) and the total user count it is spread over.

    Each process's share is `rate * its users / users`: Locust spreads users evenly over
    workers, so every worker gets an equal share, and a worker without users gets none.
    """

    rate: float
    users: int

    def share(self, local_users: int) -> float:
        if self.users <= 0 or local_users <= 0:
            return 0.0
        return self.rate * min(local_users, self.users) / self.users

    def to_message(self) -> dict:
        return {"rate": self.rate, "users": self.users}

    @classmethod
    def from_message(cls, data: dict) -> RatePlan:
        return cls(float(data["rate"]), int(data["users"]))


class ArrivalSchedule:
    """Intended send times on the perf_counter_ns clock: fixed gaps, exponential ones (Poisson),
    or gamma ones with coefficient of variation `burstiness` (shape 1/CV², the same mean gap).

    A due time in the past is still handed out (the request goes out late): skipping it
    would hide exactly the slowness open-loop traffic is meant to expose.

    Example:
        schedule = ArrivalSchedule("poisson", seed=1)
        schedule.set_rate(200.0)
        due_ns = schedule.take()  # the first one is now; then mean gaps of 5 ms
    """

    def __init__(
        self, mode: str, seed: int = 0, clock: Callable[[], int] = time.perf_counter_ns, burstiness: float = 1.0
    ) -> None:
        if mode not in (CONSTANT, POISSON, GAMMA):
            raise ValueError(f"unknown arrival mode {mode!r}")
        if not (math.isfinite(burstiness) and burstiness > 0):
            raise ValueError(f"burstiness must be a finite number > 0, got {burstiness}")
        self.mode = mode
        self.gamma_shape = 1.0 / burstiness**2
        self.rng = np.random.default_rng(seed)
        self.clock = clock
        self.rate = 0.0
        self._next_ns: int | None = None

    def gap_ns(self) -> int:
        mean_ns = 1e9 / self.rate
        if self.mode == POISSON:
            gap = self.rng.exponential(mean_ns)
        elif self.mode == GAMMA:
            gap = self.rng.gamma(self.gamma_shape, mean_ns / self.gamma_shape)
        else:
            gap = mean_ns
        return max(1, round(gap))

    def set_rate(self, rate: float) -> None:
        if rate == self.rate:
            return
        self.rate = rate
        if rate <= 0:
            self._next_ns = None  # restart from "now" when a rate comes back
        elif self._next_ns is not None:
            # A faster rate should not wait out a gap drawn at the slower one.
            self._next_ns = min(self._next_ns, self.clock() + self.gap_ns())

    def take(self) -> int | None:
        """The next intended send time, or None while the rate is 0."""
        if self.rate <= 0:
            return None
        due = self._next_ns if self._next_ns is not None else self.clock()
        self._next_ns = due + self.gap_ns()
        return due


class ClientPool:
    """Connections shared by a process's open-loop sends, one per request in flight at most.

    A client (one connection) is never used by two greenlets at once; the pool grows to
    the most requests ever in flight together, which --max-in-flight caps.
    """

    def __init__(self, open_client: Callable[[str], TritonClient]) -> None:
        self._open_client = open_client
        self._free: dict[str, list[TritonClient]] = {}
        self.opened = 0
        self.closed = False

    def checkout(self, protocol: str) -> TritonClient:
        free = self._free.setdefault(protocol, [])
        if free:
            return free.pop()
        self.opened += 1
        client = self._open_client(protocol)
        client.warm()  # beyond the users' own connections: connecting is part of this send
        return client

    def checkin(self, client: TritonClient, key: str | None = None) -> None:
        """Back to the pool, under the name it was checked out with (`key`; default its protocol)."""
        if self.closed:
            client.close()  # a request that outlived the test: its connection is not kept
            return
        self._free.setdefault(key or client.protocol, []).append(client)

    def close(self) -> None:
        self.closed = True
        for clients in self._free.values():
            for client in clients:
                client.close()
        self._free.clear()


class OpenLoop:
    """One process's open-loop sender state: its schedule, its in-flight cap, its clients.

    Users call `next_due()` (one user at a time waits for the next due time, so a stop is
    never held up by requests scheduled far ahead), then `acquire_slot()`, then send on a
    greenlet of their own and `release_slot()` when the response is in.
    """

    def __init__(
        self,
        mode: str,
        max_in_flight: int,
        drop_when_saturated: bool,
        clients: ClientPool,
        local_users: Callable[[], int],
        plan: RatePlan | None = None,
        seed: int = 0,
        burstiness: float = 1.0,
    ) -> None:
        self.schedule = ArrivalSchedule(mode, seed, burstiness=burstiness)
        self.max_in_flight = max_in_flight
        self.drop_when_saturated = drop_when_saturated
        self.clients = clients
        self.local_users = local_users
        self.plan = plan
        self._slots = BoundedSemaphore(max_in_flight)
        self._turn = Semaphore()
        self._timer = PreciseTimer()
        self._upcoming_ns: int | None = None  # the due time the turn holder waits for

    def set_plan(self, plan: RatePlan) -> None:
        self.plan = plan

    def current_rate(self) -> float:
        """This process's share of the total rate, now."""
        return self.plan.share(self.local_users()) if self.plan is not None else 0.0

    def next_due(self, stopping: Callable[[], bool]) -> int | None:
        """Wait until the next request is due and return its intended time (None: nothing due yet)."""
        # gevent hands a released lock to a waiting user only on the loop's next turn: without this
        # yield the user that just held the turn takes it again at once, and that one user (so one
        # user class, one protocol) would send every request.
        gevent.sleep(0)
        with self._turn:
            if stopping():
                return None
            self.schedule.set_rate(self.current_rate())
            due = self.schedule.take()
            if due is None:
                gevent.sleep(PAUSED_POLL_S)
                return None
            self._upcoming_ns = due
            try:
                self._timer.sleep_until(due)  # gevent.sleep would wake up to 1 ms late (timer.py)
            finally:
                self._upcoming_ns = None
            # Due after the test began to stop (Locust's stop itself blocks the loop for a few
            # ms): not part of the test, so neither sent nor counted.
            return None if stopping() else due

    def wait_for_quiet(self) -> None:
        """Hold housekeeping back until the next send is at least QUIET_NS away (or MAX_QUIET_WAIT_S
        has passed), so that work blocking the loop for a few ms does not send a request late."""
        give_up = time.perf_counter_ns() + MAX_QUIET_WAIT_S * 1e9
        while True:
            now = time.perf_counter_ns()
            due = self._upcoming_ns
            if due is None or due - now > QUIET_NS or now >= give_up:
                return
            gevent.sleep(max(0.0, (due - now) / 1e9) + 0.0005)  # until just after that send

    def acquire_slot(self) -> bool:
        """A slot for one more request in flight: waits for one, or (dropping) False at the cap."""
        if self.drop_when_saturated:
            return self._slots.acquire(blocking=False)
        self._slots.acquire()
        return True

    def release_slot(self) -> None:
        self._slots.release()

    @property
    def in_flight(self) -> int:
        return self.max_in_flight - self._slots.counter

    def close(self) -> None:
        self.clients.close()
        self._timer.close()


__all__ = ("CONSTANT", "GAMMA", "POISSON", "RATE_MESSAGE", "ArrivalSchedule", "ClientPool", "OpenLoop", "RatePlan")
