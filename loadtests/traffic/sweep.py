"""Stabilised sweeps: one level at a time, each held until it is stable the way perf_analyzer means it.

    locust -f locustfile.py --headless TritonHttpUser --model sleep --window 5 \\
        --load-shape sweep --shape-args "levels=1;2;4;8,stability=10,max_trials=10"

`python -m loadtests sweep` (loadtests/sweep.py) builds that command line; docs/sweeps.md
explains the output. A level runs like this (perf_analyzer's rule, from
src/inference_profiler.cc in triton-inference-server/perf_analyzer):

- at a tick, the shape sets the level's user count (or, with `kind=rate`, hands the rate
  to open-loop traffic through `shapes.set_rate_target` and holds `users`);
- the run's time windows (`--window` seconds, the measurement interval) are the trials,
  as the RunAggregator closes them. The window the change falls in is discarded, and
  `settle` more windows after it (default 1), so no trial mixes two levels or a ramp-up;
- after each trial, the level is stable when its last 3 trials all have inferences and,
  across them, max/min of the throughput (infer/s) and max/min of the p95 latency are
  each at most 1 + stability/100 (`DetermineStability`, `IsInferWindowStable`,
  `IsLatencyWindowStable`; the suite stabilises on p95 as `perf_analyzer --percentile=95`);
- the level ends when stable; after `max_trials` trials it ends unstable and the sweep
  goes on (perf_analyzer would stop there); once 3 trials exist and one of the last 3 has
  a p95 at or over `latency_limit_ms`, the level ends and the sweep stops (`IsDoneProfiling`);
- the level's numbers come from its last 3 trials merged (`MergePerfStatusReports`): exact
  percentiles from their merged histograms, throughput over their total length, and Triton's
  statistics between snapshots taken at the first trial's start and the last one's end.

Results go to the run directory as each level ends (`sweep.json`, `sweep.csv`, through
loadtests/recording/sweep_files.py), so an interrupted sweep keeps its finished levels.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gevent

from loadtests.errors import SpecError
from loadtests.recording.histograms import EndpointStats
from loadtests.recording.merged import merge_stats
from loadtests.recording.server_stats import ModelDelta, StatsSnapshot, compute_delta
from loadtests.traffic import shapes

logger = logging.getLogger(__name__)

STABILITY_WINDOWS = 3  # perf_analyzer's load_parameters_.stability_window
DEFAULT_STABILITY_PERCENT = 10.0
DEFAULT_MAX_TRIALS = 10
DEFAULT_SETTLE_WINDOWS = 1
# A level's users are spawned at this many users/s (all of them within a fraction of a second).
SPAWN_RATE = 100.0
# Trials start at the first window boundary this long after the tick that changed the level
# (spawn messages, and the first requests' connection set-up).
SPAWN_ALLOWANCE_S = 0.5
MAX_LEVELS = 1000
SWEEP_KEYS = ("levels", "kind", "stability", "max_trials", "latency_limit_ms", "settle", "users")
CONCURRENCY = "concurrency"
REQUEST_RATE = "request_rate"


# -- input ------------------------------------------------------------------------------
def parse_range(text: str, option: str, integer: bool) -> list[float]:
    """perf_analyzer's START[:END[:STEP]] range, END inclusive, STEP default 1.

    >>> parse_range("1:8:2", "--concurrency", integer=True)
    [1, 3, 5, 7]
    >>> parse_range("50:100:25", "--request-rate", integer=False)
    [50.0, 75.0, 100.0]

    Raises SpecError (one line, naming the option) for anything else.
    """
    example = "1:8:1" if integer else "100:500:100"
    where = f"{option} {text!r}"
    parts = str(text).strip().split(":")
    if not 1 <= len(parts) <= 3 or any(not part.strip() for part in parts):
        raise SpecError(f"{where} is not START:END:STEP (e.g. {example})")
    try:
        numbers = [int(p) if integer else float(p) for p in parts]
    except ValueError:
        kind = "whole numbers" if integer else "numbers"
        raise SpecError(f"{where}: START, END and STEP must be {kind} (e.g. {example})") from None
    if any(not math.isfinite(n) for n in numbers):
        raise SpecError(f"{where}: START, END and STEP must be finite")
    start = numbers[0]
    end = numbers[1] if len(numbers) > 1 else start
    step = numbers[2] if len(numbers) > 2 else 1
    if start < 1 if integer else start <= 0:
        raise SpecError(f"{where}: START must be {'at least 1' if integer else 'positive'}")
    if end < start:
        raise SpecError(f"{where}: END must not be below START")
    if step <= 0:
        raise SpecError(f"{where}: STEP must be positive")
    count = math.floor((end - start) / step + 1e-9) + 1
    if count > MAX_LEVELS:
        raise SpecError(f"{where}: {count} levels is more than {MAX_LEVELS}")
    if integer:
        return [start + i * step for i in range(count)]
    return [round(start + i * step, 9) for i in range(count)]


def _levels_arg(text: str) -> list[float]:
    parts = [part.strip() for part in text.split(";") if part.strip()]
    if not parts:
        raise ValueError("is empty (expected e.g. levels=1;2;4)")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValueError("must be positive numbers separated by ';' (e.g. levels=1;2;4)") from None
    if any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError("must be positive numbers separated by ';' (e.g. levels=1;2;4)")
    return values


def _percent_arg(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be a percentage >= 0")
    return value


def _int_arg(minimum: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value

    return convert


def _limit_arg(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be >= 0 (0: no limit)")
    return value


def _kind_arg(text: str) -> str:
    if text not in (shapes.USERS, shapes.RATE):
        raise ValueError(f"must be one of {shapes.USERS}, {shapes.RATE}")
    return text


def _worded(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """Python's own conversion errors ("could not convert string to float") read as 'is not a number'."""

    def checked(text: str) -> Any:
        try:
            return convert(text)
        except ValueError as error:
            if str(error).startswith(("must", "is")):
                raise
            raise ValueError("is not a number") from None

    return checked


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    key: _worded(convert)
    for key, convert in {
        "levels": _levels_arg,
        "kind": _kind_arg,
        "stability": _percent_arg,
        "max_trials": _int_arg(STABILITY_WINDOWS),
        "latency_limit_ms": _limit_arg,
        "settle": _int_arg(0),
        "users": _int_arg(1),
    }.items()
}


def parse_sweep_args(text: str | None) -> dict[str, Any]:
    """`--shape-args` of the sweep shape, defaults filled in; raises SpecError.

    >>> parse_sweep_args("levels=1;2;4")["max_trials"]
    10
    """
    accepted = f"(accepted keys: {', '.join(SWEEP_KEYS)})"
    try:
        args = shapes.split_shape_args(text, tuple(_CONVERTERS), _CONVERTERS)
    except shapes.ShapeArgError as error:
        raise SpecError(f"--shape-args for sweep: {error} {accepted}") from None
    if "levels" not in args:
        raise SpecError(f"--shape-args for sweep: missing levels= {accepted}")
    args.setdefault("kind", shapes.USERS)
    args.setdefault("stability", DEFAULT_STABILITY_PERCENT)
    args.setdefault("max_trials", DEFAULT_MAX_TRIALS)
    args.setdefault("latency_limit_ms", 0.0)
    args.setdefault("settle", DEFAULT_SETTLE_WINDOWS)
    if args["kind"] == shapes.USERS:
        if "users" in args:
            raise SpecError(f"--shape-args for sweep: users= applies to kind=rate only {accepted}")
        if any(level != int(level) for level in args["levels"]):
            raise SpecError(f"--shape-args for sweep: user counts must be whole numbers {accepted}")
    return args


# -- the stability rule (pure) ---------------------------------------------------------------
def is_stable(throughputs: Sequence[float], latencies: Sequence[float], stability_percent: float) -> bool:
    """perf_analyzer's DetermineStability over the last 3 trials (throughput infer/s, p95 µs).

    >>> is_stable([100, 105, 109], [2000, 2100, 2150], 10)
    True
    >>> is_stable([100, 105, 111], [2000, 2100, 2150], 10)
    False
    """
    n = STABILITY_WINDOWS
    if len(throughputs) < n or len(latencies) < n:
        return False
    last_t, last_l = list(throughputs[-n:]), list(latencies[-n:])
    if min(last_t) <= 0 or min(last_l) <= 0:
        return False  # a trial without inferences is never stable
    bound = 1 + stability_percent / 100
    return max(last_t) / min(last_t) <= bound and max(last_l) / min(last_l) <= bound


def over_latency_limit(latencies: Sequence[float], limit_us: float) -> bool:
    """perf_analyzer's IsDoneProfiling threshold: once 3 trials exist, one of the last 3 at or over it.

    >>> over_latency_limit([10, 30, 12], 25), over_latency_limit([30, 10], 25), over_latency_limit([30] * 3, 0)
    (True, False, False)
    """
    return limit_us > 0 and len(latencies) >= STABILITY_WINDOWS and max(latencies[-STABILITY_WINDOWS:]) >= limit_us


# -- one level's trials and result -------------------------------------------------------------
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
    server: dict[str, ModelDelta]
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
        level: float | int = int(self.level) if self.kind == shapes.USERS else self.level
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
            "latency_us": self.stats.latency_summary_us(),
            **({"latency_uncorrected_us": self.stats.uncorrected_summary_us()} if self.stats.uncorrected else {}),
            "server": {model: delta.to_json() for model, delta in sorted(self.server.items())},
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
    kind: str = shapes.USERS
    stability_percent: float = DEFAULT_STABILITY_PERCENT
    max_trials: int = DEFAULT_MAX_TRIALS
    latency_limit_ms: float = 0.0
    settle: int = DEFAULT_SETTLE_WINDOWS
    server_delta: Callable[[float, float], dict[str, ModelDelta]] = lambda _t0, _t1: {}
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

    def _result(self, stable: bool) -> LevelResult:
        last = self.trials[-STABILITY_WINDOWS:]
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


# -- Triton's statistics at window boundaries ------------------------------------------------------
class BoundarySnapshots:
    """Snapshots of Triton's statistics at every window boundary (a greenlet on the master).

    A level's server-side numbers are the delta between the snapshots at its first trial's
    start and its last trial's end; the poller's nearest snapshots stand in if one failed.
    """

    KEEP = 64

    def __init__(self, poller, window_s: float, clock: Callable[[], float] = time.time) -> None:
        self.poller = poller
        self.window_s = window_s
        self.clock = clock
        self.by_boundary: dict[int, StatsSnapshot] = {}
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)

    def _run(self) -> None:
        while True:
            key = math.floor(self.clock() / self.window_s) + 1
            gevent.sleep(max(0.0, key * self.window_s - self.clock()))
            snapshot = self.poller.snapshot_now()
            if snapshot is not None:
                self.by_boundary[key] = snapshot
            for old in sorted(self.by_boundary)[: -self.KEEP]:
                del self.by_boundary[old]

    def delta(self, start_s: float, end_s: float) -> dict[str, ModelDelta]:
        before = self.by_boundary.get(round(start_s / self.window_s))
        after = self.by_boundary.get(round(end_s / self.window_s))
        if before is not None and after is not None:
            return compute_delta(before, after)
        return self.poller.delta_between(start_s, end_s)


# -- Locust ---------------------------------------------------------------------------------------
class _SweepProfile(shapes.Profile):
    """What TrafficShape's machinery expects of a profile; the levels' timing is adaptive."""

    def __init__(self, shape: SweepShape, kind: str) -> None:
        self.shape = shape
        self.kind = kind

    def target_at(self, t: float) -> float | None:
        controller = self.shape.controller
        return None if controller is None else controller.level

    def steps(self) -> list[shapes.Step]:
        return []


class SweepShape(shapes.TrafficShape):
    """A stabilised sweep: `--load-shape sweep --shape-args "levels=1;2;4;8,stability=10"`.

    Needs the run (its closed windows and Triton's statistics): loadtests.runtime calls
    `attach_run(run)` at test start, on the master or single process.
    """

    name = "sweep"

    def _begin_run(self) -> None:
        super()._begin_run()
        previous = getattr(self, "snapshots", None)
        if previous is not None:
            previous.stop()  # a web UI run before this one
        self.controller: SweepController | None = None
        self.run = None
        self.window_s = 1.0
        self.snapshots: BoundarySnapshots | None = None
        self.level_starts: list[tuple[int, float, float]] = []  # (index, level, Unix time)
        self.finished_at: float | None = None

    def load(self) -> shapes.Profile:
        options = self.runner.environment.parsed_options if self.runner is not None else None
        self.args = parse_sweep_args(getattr(options, "shape_args", "") or "")
        kind = self.args["kind"]
        if kind == shapes.RATE:
            if shapes.set_rate_target is None:
                raise SpecError(f"--load-shape sweep with kind=rate needs open-loop traffic ({shapes.OPEN_LOOP_HINT})")
            self.args.setdefault("users", int(getattr(options, "num_users", 0) or 1))
        self.window_s = float(getattr(options, "window", 1.0) or 1.0)
        self.controller = SweepController(
            levels=list(self.args["levels"]),
            kind=kind,
            stability_percent=self.args["stability"],
            max_trials=self.args["max_trials"],
            latency_limit_ms=self.args["latency_limit_ms"],
            settle=self.args["settle"],
            server_delta=self._server_delta,
        )
        self.profile = _SweepProfile(self, kind)
        return self.profile

    # -- the run ----------------------------------------------------------------------------
    def attach_run(self, run) -> None:
        """Follow the run's closed windows; snapshot Triton's statistics at window boundaries."""
        if self.profile is None:
            self.load()
        self.run = run
        self.window_s = run.aggregator.window_s
        run.aggregator.observers.append(self._on_window)
        self.snapshots = BoundarySnapshots(run.server.stats, self.window_s)
        self.snapshots.start()

    def _server_delta(self, start_s: float, end_s: float) -> dict[str, ModelDelta]:
        return self.snapshots.delta(start_s, end_s) if self.snapshots is not None else {}

    def _on_window(self, start_s: float, window_s: float, endpoints: dict[str, EndpointStats]) -> None:
        controller = self.controller
        if controller is None or controller.done:
            return
        stopped_at = self.run.directory.stopped_at if self.run is not None else None
        if stopped_at is not None and start_s + window_s > stopped_at + 1e-6:
            return  # the run's last window, cut short by the stop: not a full trial
        result = controller.on_window(start_s, window_s, endpoints)
        if result is None:
            return
        print(progress_line(result, len(controller.levels), controller.results), flush=True)
        if controller.done and self.snapshots is not None:
            self.snapshots.stop()
        self.write_results()

    def write_results(self) -> None:
        """sweep.json and sweep.csv, rewritten as each level ends (and at the run's end)."""
        from loadtests.recording import sweep_files

        run = self.run
        if run is None or self.controller is None or run.directory.finished:
            return
        try:
            sweep_files.write(
                run.directory.path, self.controller, relative_to=run.directory.started_at, settings=self.settings_json()
            )
        except OSError:
            logger.exception("sweep: could not write the results")

    def settings_json(self) -> dict[str, Any]:
        """sweep.json's "settings": what the levels were held to."""
        controller = self.controller
        return {
            "levels": list(controller.levels),
            "measurement_interval_ms": round(self.window_s * 1000, 3),
            "stability_percentage": controller.stability_percent,
            "max_trials": controller.max_trials,
            "latency_limit_ms": controller.latency_limit_ms,
            "settle_windows": controller.settle,
        }

    # -- Locust's tick ------------------------------------------------------------------------
    def tick(self) -> tuple[int, float] | None:
        if not self.loaded():
            return None
        controller = self.controller
        if controller.done:
            if self.finished_at is None:
                self.finished_at = time.time()
            return None
        level = controller.level
        if controller.pending:
            self._start_level(controller, level)
        users = self.args["users"] if controller.kind == shapes.RATE else int(level)
        return users, SPAWN_RATE

    def _start_level(self, controller: SweepController, level: float) -> None:
        now = time.time()
        if controller.kind == shapes.RATE:
            shapes.set_rate_target(level)
        controller.start_level(now, self.window_s)
        self.level_starts.append((controller.index, level, now))
        label = "concurrency" if controller.kind == shapes.USERS else "request rate"
        print(f"sweep: {label} {level:g} ({controller.index + 1}/{len(controller.levels)}) started", flush=True)
        step = shapes.Step(controller.index, now - self.started_at, now - self.started_at, level)
        self.passed_steps.append(step)
        if self.on_step is not None:
            try:
                self.on_step(step)
            except Exception:  # a recording problem must not stop the load
                logger.exception("shape sweep: on_step failed")

    def record(self, relative_to: float | None = None, final: bool = False) -> dict[str, Any]:
        """steps.json: one step per level started, from its change to the next one's (or now)."""
        offset = 0.0 if relative_to is None else relative_to
        now = time.time()
        steps = []
        for i, (index, level, started) in enumerate(self.level_starts):
            ended = self.level_starts[i + 1][2] if i + 1 < len(self.level_starts) else self.finished_at or now
            steps.append(
                {
                    "index": index,
                    "start_s": round(started - offset, 3),
                    "end_s": round(ended - offset, 3),
                    "target": float(level),
                }
            )
        return {
            "shape": self.name,
            "kind": self.profile.kind if self.profile is not None else None,
            "args": dict(self.args),
            "started_at": self.started_at,
            "steps": steps,
        }


def progress_line(result: LevelResult, total: int, results: list[LevelResult]) -> str:
    """One line per finished level, e.g.
    `sweep: concurrency 2 (2/8): stable after 4 windows: 99.5 infer/sec, p95 20871 usec`."""
    label = "concurrency" if result.kind == shapes.USERS else "request rate"
    verdict = f"stable after {result.windows} windows" if result.stable else f"unstable after {result.windows} windows"
    line = (
        f"sweep: {label} {result.level:g} ({len(results)}/{total}): {verdict}: "
        f"{result.throughput_infer_per_s:.6g} infer/sec, p95 {int(result.p95_us)} usec"
    )
    if result.over_latency_limit:
        line += " (over the latency limit: sweep stops)"
    return line


shapes.register_shape(SweepShape, SWEEP_KEYS, parse_sweep_args)
