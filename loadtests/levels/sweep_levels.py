"""A sweep's levels, decided from closed windows: the trials of a level, its result, the controller.

No Locust and no clock here: `SweepController` is fed the run's closed windows and the time
a level's load was set, so tests drive it with fake windows. The rule is perf_analyzer's
(loadtests/levels/stability.py): the window a level's change falls in is discarded, and
`settle` more; the level ends when its last 3 trials are stable, after `max_trials`, or at
the latency limit; its numbers are its last 3 trials merged (`MergePerfStatusReports`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtests.levels.stability import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_SETTLE_WINDOWS,
    DEFAULT_STABILITY_PERCENT,
    STABILITY_WINDOWS,
    is_stable,
    over_latency_limit,
)
from loadtests.recording.histograms import EndpointStats, merge_stats
from loadtests.traffic.profiles import USERS

# Trials start at the first window boundary this long after the tick that changed the level
# (spawn messages, and the first requests' connection set-up).
SPAWN_ALLOWANCE_S = 0.5
# Triton's statistics over a level's trials, per model (recording's ModelDelta: `.to_json()`).
ServerDelta = Callable[[float, float], dict[str, Any]]


@dataclass
class Trial:
    """One measurement window at a level: its endpoints merged (a sweep has one endpoint)."""

    start_s: float  # Unix time of the window's start
    window_s: float
    stats: EndpointStats

    @classmethod
    def of(cls, start_s: float, window_s: float, endpoints: dict[str, EndpointStats]) -> Trial:
        return cls(start_s, window_s, merge_parts(endpoints.values()))

    @property
    def infer_per_s(self) -> float:
        return self.stats.inferences / self.window_s

    @property
    def p95_us(self) -> float:
        return self.stats.latency_summary_us()["p95"]


def merge_parts(parts: Sequence[EndpointStats] | Any) -> EndpointStats:
    """One EndpointStats for a sweep's single load (its endpoints, or its trials), named after the first."""
    parts = list(parts)
    return merge_stats(parts, parts[0].name if parts else "")


@dataclass
class LevelResult:
    """What a level measured (its last 3 trials merged); times are Unix seconds."""

    level: float
    kind: str
    stable: bool
    windows: int
    start_s: float
    end_s: float
    stats: EndpointStats
    server: dict[str, Any]
    over_latency_limit: bool = False

    @property
    def duration_s(self) -> float:
        return max(self.end_s - self.start_s, 1e-9)

    @property
    def throughput_infer_per_s(self) -> float:
        return self.stats.inferences / self.duration_s

    @property
    def p95_us(self) -> float:
        return self.stats.latency_summary_us()["p95"]

    def to_json(self, relative_to: float) -> dict[str, Any]:
        """One entry of sweep.json's `levels`; times on timeseries.csv's clock (`relative_to`: run start)."""
        level: float | int = int(self.level) if self.kind == USERS else self.level
        latency = self.stats.latency_summary_us()
        return {
            "level": level,
            "stable": self.stable,
            "windows": self.windows,
            "start_s": round(self.start_s - relative_to, 3),
            "end_s": round(self.end_s - relative_to, 3),
            "requests": self.stats.requests,
            "failures": self.stats.failure_count,
            "throughput_rps": round(self.stats.requests / self.duration_s, 3),
            "throughput_infer_per_s": round(self.throughput_infer_per_s, 3),
            "latency_us": latency,
            **({"latency_uncorrected_us": self.stats.uncorrected_summary_us()} if self.stats.uncorrected else {}),
            "server": {model: delta.to_json() for model, delta in sorted(self.server.items())},
            # A streamed model's time to first response, gaps, responses: summary.json's `stream`.
            **({"stream": self.stats.stream_json(latency, self.duration_s)} if self.stats.stream else {}),
        }


# -- the controller (no Locust: fed windows and times) -------------------------------------------
@dataclass
class SweepController:
    """Decides level changes from closed windows. Locust-free, so tests drive it with fake windows.

    `start_level(now)` when the level's load is set; `on_window(...)` for each closed window
    (returns the finished LevelResult, if this window ended the level); `done` at the end.
    `server_delta(t0, t1)` gives Triton's statistics over a level's trials.
    """

    levels: list[float]
    kind: str = USERS
    stability_percent: float = DEFAULT_STABILITY_PERCENT
    max_trials: int = DEFAULT_MAX_TRIALS
    latency_limit_ms: float = 0.0
    settle: int = DEFAULT_SETTLE_WINDOWS
    server_delta: ServerDelta = lambda _t0, _t1: {}
    index: int = 0
    started: int = -1  # the index of the level whose load is set
    usable_from: float = math.inf
    trials: list[Trial] = field(default_factory=list)
    results: list[LevelResult] = field(default_factory=list)
    stopped_by: str | None = None

    @property
    def done(self) -> bool:
        return self.stopped_by is not None

    @property
    def level(self) -> float | None:
        return None if self.done else self.levels[self.index]

    @property
    def pending(self) -> bool:
        """True when the current level's load is still to be set."""
        return not self.done and self.started != self.index

    def start_level(self, now: float, window_s: float) -> None:
        """The current level's load was set at `now`: trials begin at the first clean window."""
        self.started = self.index
        self.trials = []
        first_clean = math.ceil((now + SPAWN_ALLOWANCE_S) / window_s - 1e-9) * window_s
        self.usable_from = first_clean + self.settle * window_s

    def on_window(self, start_s: float, window_s: float, endpoints: dict[str, EndpointStats]) -> LevelResult | None:
        if self.pending or self.done or start_s < self.usable_from - 1e-6:
            return None  # before the level's load was set, a straddling window, or settling
        # A window in which nothing completed is never closed (it holds no data), yet it is a
        # trial: one with no inferences, never stable, so a stalled level still ends at max_trials.
        expected = self.trials[-1].start_s + window_s if self.trials else self.usable_from
        while start_s > expected + 1e-6:
            result = self._add(Trial.of(expected, window_s, {}))
            if result is not None:
                return result  # this window then belongs to the next level's settling
            expected += window_s
        return self._add(Trial.of(start_s, window_s, endpoints))

    def _add(self, trial: Trial) -> LevelResult | None:
        self.trials.append(trial)
        throughputs = [trial.infer_per_s for trial in self.trials]
        latencies = [trial.p95_us for trial in self.trials]
        stable = is_stable(throughputs, latencies, self.stability_percent)
        over = over_latency_limit(latencies, self.latency_limit_ms * 1000)
        if not (stable or over or len(self.trials) >= self.max_trials):
            return None
        result = self._result(stable)
        over = over or (self.latency_limit_ms > 0 and result.p95_us >= self.latency_limit_ms * 1000)
        result.over_latency_limit = over
        self.results.append(result)
        self.index += 1
        if over:
            self.stopped_by = "latency_limit"
        elif self.index >= len(self.levels):
            self.stopped_by = "done"
        return result

    def _result(self, stable: bool, windows: int = STABILITY_WINDOWS) -> LevelResult:
        """The level's numbers: its last `windows` trials merged (perf_analyzer's last 3)."""
        last = self.trials[-windows:]
        start_s, end_s = last[0].start_s, last[-1].start_s + last[-1].window_s
        return LevelResult(
            level=self.levels[self.index],
            kind=self.kind,
            stable=stable,
            windows=len(self.trials),
            start_s=start_s,
            end_s=end_s,
            stats=merge_parts(trial.stats for trial in last),
            server=self.server_delta(start_s, end_s),
        )
