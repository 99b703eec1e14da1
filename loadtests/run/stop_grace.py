"""The stop grace: how long a stopping user may finish its in-flight request.

A stopping user lets its in-flight request finish for up to Locust's stop timeout (unless
--stop-timeout is given: then that); a request still in flight then is cut and counted as
"interrupted". A run so ends within a few seconds of -t whatever the server does (a frozen
Triton included), and every request that went out is still in the counts. The grace
follows twice the slowest success so far (up to the request timeout), so a healthy model
whose requests take seconds is never cut at the end, while a frozen server costs 2 s.
"""

from __future__ import annotations

from loadtests.run.process import SuiteProcess
from loadtests.run.role import Role

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
        self.process.slowest_ms = 0.0
        if self.process.role is Role.WORKER:  # its options (and --stop-timeout) arrive now
            self.automatic = not self.process.settings.stop_timeout_s

    def follow(self, slowest_ms: float) -> None:
        """Read by Locust when users stop: STOP_GRACE_S, or twice the slowest success."""
        if self.automatic:
            grace_s = max(STOP_GRACE_S, STOP_GRACE_PER_SLOWEST * slowest_ms / 1000.0)
            limit_s = max(self.process.settings.request_timeout_s, STOP_GRACE_S)
            self.environment.stop_timeout = min(grace_s, limit_s)
