"""Ctrl-C delivered where Locust expects it: in the main greenlet, never in the middle of our work.

Python raises KeyboardInterrupt in whatever code runs when SIGINT arrives. Under gevent that
is any greenlet: measured, one SIGINT in three landed in the run loop while it merged and
closed windows, so a window was popped and never written (timeseries.csv 1,155 requests short
of summary.json). Locust handles Ctrl-C as a KeyboardInterrupt in its main greenlet (which
then stops the runner and writes everything), so SIGINT is routed there and only there; the
greenlet that was running finishes its step first.
"""

from __future__ import annotations

import signal

import gevent
from greenlet import getcurrent


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
