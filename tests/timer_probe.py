"""The host's own timer jitter, measured beside a run: how often a wake-up is over 1 ms late.

    python -m tests.timer_probe 50 5     # Poisson wake-ups at 50/s for 5 s -> {"wakeups": 251, "late": 0}

The open-loop scheduler counts a request as late when it goes out more than 1 ms after
its intended time. On a quiet machine that is almost never; on a shared host the kernel
can preempt any process for longer. This probe waits on the same precise timer, at the
same rate, at the same time as the run under test, in a process that does nothing else,
so a test can compare the suite's late count with what the host alone caused.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from loadtests.traffic.timer import PreciseTimer

LATE_NS = 1_000_000


def probe(rate: float, seconds: float, seed: int = 1) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    timer = PreciseTimer()
    due = time.perf_counter_ns()
    end = due + int(seconds * 1e9)
    wakeups = late = 0
    while True:
        due += int(rng.exponential(1.0 / rate) * 1e9)
        if due > end:
            break
        timer.sleep_until(due)
        wakeups += 1
        late += time.perf_counter_ns() - due > LATE_NS
    timer.close()
    return {"wakeups": wakeups, "late": late}


if __name__ == "__main__":
    print(json.dumps(probe(float(sys.argv[1]), float(sys.argv[2]))))
