"""The suite's locustfile with the master's Python allocations traced: where does its memory go?

    .venv/bin/python bench/soak.py --trace-memory /tmp/trace ...      # how soak.py uses it
    TRACE_MEMORY_DIR=/tmp/trace TRACE_MEMORY_AT=120,600 \
        python -m locust -f bench/traced_locustfile.py --master ...  # by hand

On the master only (the process whose growth we chase), tracemalloc starts at init. Every
60 s `rss.tsv` gets a line: seconds since init, RSS, the size tracemalloc sees live (the gap
between the two is the allocator's, not Python's). At each time of TRACE_MEMORY_AT (seconds
since init) a snapshot is taken; every snapshot after the first is compared with the first,
and the 30 largest differences by allocation traceback go to `diff_<t>.txt`, so what grew
between the two moments is named by the line that allocated it.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gevent
import psutil
from locust import events
from locust.runners import MasterRunner

from locustfile import (  # noqa: F401  (importing it installs the suite's listeners)
    BertQAGrpcUser,
    BertQAHttpUser,
    ResNetGrpcUser,
    ResNetHttpUser,
    TritonGrpcUser,
    TritonHttpUser,
)

# Frames per allocation: more name the caller better, but make each snapshot slower (a snapshot
# blocks the master's loop; at 12 frames on a busy machine for long enough to lose its workers).
TRACE_FRAMES = int(os.environ.get("TRACE_MEMORY_FRAMES", "5"))
RSS_EVERY_S = 60
TOP = 30
# Not the tracer's own bookkeeping.
_IGNORED = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>"))


def _trace(out: Path, at_s: list[float]) -> None:
    start = time.monotonic()
    first: tracemalloc.Snapshot | None = None
    next_rss = 0.0
    with open(out / "rss.tsv", "w", encoding="utf-8") as rss_file:
        rss_file.write("t_s\trss_MB\ttraced_MB\n")
        while True:
            now = time.monotonic() - start
            if now >= next_rss:
                traced, _peak = tracemalloc.get_traced_memory()
                rss = psutil.Process().memory_info().rss
                rss_file.write(f"{now:.0f}\t{rss / 1e6:.1f}\t{traced / 1e6:.1f}\n")
                rss_file.flush()
                next_rss += RSS_EVERY_S
            if at_s and now >= at_s[0]:
                at_s.pop(0)
                # Garbage waiting for the collector is not memory the run holds: a full collection
                # first, or the diff may blame whatever allocated it (a soak at 10 snapshots/s
                # blamed 25 MB on parsed metrics labels, which the poller does not hold).
                gc.collect()
                snapshot = tracemalloc.take_snapshot().filter_traces(_IGNORED)
                if first is None:
                    first = snapshot
                else:
                    _write_diff(out / f"diff_{now:.0f}.txt", snapshot, first, now)
            gevent.sleep(1.0)


def _write_diff(path: Path, snapshot: tracemalloc.Snapshot, first: tracemalloc.Snapshot, now: float) -> None:
    stats = snapshot.compare_to(first, "traceback")
    grown = sum(stat.size_diff for stat in stats)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"at {now:.0f} s, against the first snapshot: {grown / 1e6:+.2f} MB live Python memory\n\n")
        for stat in stats[:TOP]:
            f.write(f"{stat.size_diff / 1e6:+.3f} MB ({stat.count_diff:+d} blocks), now {stat.size / 1e6:.3f} MB\n")
            for line in stat.traceback.format(most_recent_first=True):
                f.write(f"    {line}\n")
            f.write("\n")


@events.init.add_listener
def _start_tracing(environment, **_kwargs) -> None:
    out = os.environ.get("TRACE_MEMORY_DIR")
    if not out or not isinstance(environment.runner, MasterRunner):
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    at_s = sorted(float(t) for t in os.environ.get("TRACE_MEMORY_AT", "120,600").split(",") if t)
    tracemalloc.start(TRACE_FRAMES)
    gevent.spawn(_trace, Path(out), at_s)
