"""CPU throttling of the load generator's own container, from its cgroup's cpu.stat.

On Kubernetes a worker with a CPU limit runs under the CFS quota: when its threads (gRPC's
native ones included) use the period's quota early, the kernel stops them until the next
period, and that wait lands inside the latencies the worker measures. The cgroup counts it:

    cgroup v2  /sys/fs/cgroup/cpu.stat       nr_periods, nr_throttled, throttled_usec
    cgroup v1  /sys/fs/cgroup/cpu/cpu.stat   nr_periods, nr_throttled, throttled_time (ns)

Each process with users reads its counters at test start and with each report; the deltas
are summed over the workers into summary.json's `load_generator` (`cpu_throttled_s`,
`cpu_throttled_periods`, `cpu_periods`), and the report warns when any period was
throttled. Without a cgroup CPU controller (a laptop, no limit) the fields are null.

    meter = ThrottleMeter()
    ...
    meter.take()  # {"periods": 1200, "throttled_periods": 35, "throttled_us": 800000}, or None
"""

from __future__ import annotations

from pathlib import Path

CPU_STAT_PATHS = (
    Path("/sys/fs/cgroup/cpu.stat"),
    Path("/sys/fs/cgroup/cpu/cpu.stat"),
    Path("/sys/fs/cgroup/cpu,cpuacct/cpu.stat"),
)


def read_cpu_stat(paths: tuple[Path, ...] = CPU_STAT_PATHS) -> dict[str, int] | None:
    """{"periods", "throttled_periods", "throttled_us"} from the first cpu.stat that has them."""
    for path in paths:
        try:
            fields = dict(line.split() for line in path.read_text().splitlines() if len(line.split()) == 2)
        except (OSError, ValueError):
            continue
        if "nr_throttled" not in fields:
            continue  # cgroup v2 without the cpu controller lists only usage
        if "throttled_usec" in fields:
            throttled_us = int(fields["throttled_usec"])
        else:
            throttled_us = int(fields.get("throttled_time", 0)) // 1000  # v1 counts nanoseconds
        return {
            "periods": int(fields.get("nr_periods", 0)),
            "throttled_periods": int(fields["nr_throttled"]),
            "throttled_us": throttled_us,
        }
    return None


class ThrottleMeter:
    """Deltas of the cgroup's throttling counters between calls (None without a cgroup)."""

    def __init__(self, paths: tuple[Path, ...] = CPU_STAT_PATHS) -> None:
        self.paths = paths
        self._mark = read_cpu_stat(paths)

    def take(self) -> dict[str, int] | None:
        now = read_cpu_stat(self.paths)
        if now is None or self._mark is None:
            self._mark = now
            return None
        delta = {key: now[key] - self._mark[key] for key in now}
        self._mark = now
        return delta


def add(total: dict[str, int] | None, delta: dict[str, int] | None) -> dict[str, int] | None:
    """Sum two deltas (a worker's into the run's); None when neither has a cgroup."""
    if delta is None:
        return total
    if total is None:
        return dict(delta)
    return {key: total.get(key, 0) + value for key, value in delta.items()}
