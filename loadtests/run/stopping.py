"""Ctrl-C delivered where Locust expects it: in the main greenlet, never in the middle of our work.

Python raises KeyboardInterrupt in whatever code runs when SIGINT arrives. Under gevent that
is any greenlet: measured, one SIGINT in three landed in the run loop while it merged and
closed windows, so a window was popped and never written (timeseries.csv 1,155 requests short
of summary.json). Locust handles Ctrl-C as a KeyboardInterrupt in its main greenlet (which
then stops the runner and writes everything), so SIGINT is routed there and only there; the
greenlet that was running finishes its step first.

The stop grace: how long a stopping user may finish its in-flight request.

A stopping user lets its in-flight request finish for up to Locust's stop timeout (unless
--stop-timeout is given: then that); a request still in flight then is cut and counted as
"interrupted". A run so ends within a few seconds of -t whatever the server does (a frozen
Triton included), and every request that went out is still in the counts. The grace
follows twice the slowest success so far (up to the request timeout), so a healthy model
whose requests take seconds is never cut at the end, while a frozen server costs 2 s.

What the stop itself costs the requests in flight: Locust's `Runner.stop()` first calls
`inspect.stack()` (for a debug line), and the first such call in a process maps every loaded
module to its file, 65 ms on this 2-core host, more when it is busy, with the event loop held.
Every request in flight then had that time added to its latency: the run's max was often one
of them (`ended_during_stop`). The suite makes that call at each test start, before any
request, so the one at the stop finds the map made (`warm_the_stop`).
"""

from __future__ import annotations

import inspect
import signal

import gevent
from greenlet import getcurrent

from loadtests.run.process import SuiteProcess
from loadtests.run.role import Role


def route_sigint_to_main_greenlet() -> None:
    """Call from the main greenlet (Locust's init). A SIGINT that Python ignores (a background job
    of a non-interactive shell) stays ignored, as it would without this."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return
    main = getcurrent()
    hub = gevent.get_hub()

    def interrupt() -> None:
        # From the hub's loop, not from inside whichever greenlet happened to run.
        hub.loop.run_callback(main.throw, KeyboardInterrupt())

    gevent.signal_handler(signal.SIGINT, interrupt)


STOP_GRACE_S = 2.0
STOP_GRACE_PER_SLOWEST = 2.0


class StopGrace:
    """Sets Locust's `environment.stop_timeout` from the slowest success (every role)."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process
        self.environment = process.environment
        # True when no --stop-timeout was given: the grace is the suite's to set.
        self.automatic = False

    def register(self) -> None:
        self.environment.events.test_start.add_listener(self.on_test_start)

    def at_init(self) -> None:
        """Master or single process, at init: the default grace unless --stop-timeout was given."""
        if not self.environment.stop_timeout:
            self.automatic = True
            self.environment.stop_timeout = STOP_GRACE_S

    def on_test_start(self, **_kwargs) -> None:
        warm_the_stop()
        self.process.slowest_ms = 0.0
        if self.process.role is Role.WORKER:  # its options (and --stop-timeout) arrive now
            self.automatic = not self.process.settings.stop_timeout_s

    def follow(self, slowest_ms: float) -> None:
        """Read by Locust when users stop: STOP_GRACE_S, or twice the slowest success."""
        if self.automatic:
            grace_s = max(STOP_GRACE_S, STOP_GRACE_PER_SLOWEST * slowest_ms / 1000.0)
            limit_s = max(self.process.settings.request_timeout_s, STOP_GRACE_S)
            self.environment.stop_timeout = min(grace_s, limit_s)


def warm_the_stop() -> None:
    """Before any request: Locust's stop calls inspect.stack() with the loop held; its first call
    in a process scans every loaded module's file, later ones only modules imported since."""
    inspect.stack()
