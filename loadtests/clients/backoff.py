"""A closed-loop user's pause after a failure that means no server is there to measure.

While Triton refuses connections (killed, restarting, not yet listening) or is going away (it
unloads its models when it stops), a closed-loop user would otherwise fail, retry and fail
again as fast as the CPU allows: measured before this pause, 1,800-2,100 failed requests/s per
user, burning the worker's CPU and flooding the failure table (a stopping Triton: 36,000 "not
found" answers in a second). Each consecutive such failure (its class `backs_off`, see
failures.py) doubles the pause, from 1 ms up to 100 ms; any other outcome (a success, an
overloaded or invalid request, a timeout) resets it. Overload is never backed off: it is what
the test measures. The failures are still sent and counted: the outage is measured, just not
hammered.

    backoff = ConnectionBackoff()
    failure = client.infer(...)
    gevent.sleep(backoff.after(failure))  # 0.0 after a success
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtests.clients.failures import backs_off

FIRST_PAUSE_S = 0.001
MAX_PAUSE_S = 0.100


@dataclass
class ConnectionBackoff:
    first_s: float = FIRST_PAUSE_S
    max_s: float = MAX_PAUSE_S
    _next_s: float = 0.0

    def after(self, failure: Exception | None) -> float:
        """The pause before the next request, given how the last one ended."""
        if failure is None or not backs_off(str(failure)):
            self._next_s = 0.0
            return 0.0
        pause = self._next_s or self.first_s
        self._next_s = min(pause * 2, self.max_s)
        return pause
