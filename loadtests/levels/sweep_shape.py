"""The stabilised sweep as a load shape: one level at a time, each held until it is stable
the way perf_analyzer means it.

    locust -f locustfile.py --headless TritonHttpUser --model sleep --window 5 \\
        --load-shape sweep --shape-args "levels=1;2;4;8,stability=10,max_trials=10"

`python -m loadtests sweep` (loadtests/commands/sweep.py) builds that command line;
docs/guides/sweeps.md explains the output. A level runs like this (perf_analyzer's rule, from
src/inference_profiler.cc in triton-inference-server/perf_analyzer):

- at a tick, the shape sets the level's user count (or, with `kind=rate`, fires
  `target_rate_changed` for open-loop traffic and holds `users`);
- the run's time windows (`--window` seconds, the measurement interval) are the trials, as
  `window_closed` reports them. The window the change falls in is discarded, and `settle`
  more windows after it (default 1), so no trial mixes two levels or a ramp-up;
- the level ends when its last 3 trials are stable, unstable after `max_trials` trials (the
  sweep goes on), or at `latency_limit_ms` (the sweep stops): loadtests/levels/sweep_levels.py;
- the level's numbers come from its last 3 trials merged, and Triton's statistics between
  snapshots taken at the first trial's start and the last one's end (boundary_snapshots.py).

The shape follows the run on the suite's event spine: `run_started` (the directory, the
window length, how to snapshot Triton), `window_closed`, `run_stopping` (the last, cut
window is no trial) and `run_finished`. Results go to the run directory as each level ends
(`sweep.json`, `sweep.csv`, through loadtests/levels/sweep_files.py), so an interrupted
sweep keeps its finished levels.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadtests.config.settings import Settings
from loadtests.events import RunStarted, SuiteEvents
from loadtests.levels import sweep_files
from loadtests.levels.boundary_snapshots import BoundarySnapshots
from loadtests.levels.sweep_args import SWEEP_KEYS, parse_sweep_args
from loadtests.levels.sweep_levels import LevelResult, SweepController
from loadtests.recording.histograms import EndpointStats
from loadtests.traffic.profiles import RATE, USERS, Profile
from loadtests.traffic.shape import TrafficShape, rate_shape_users
from loadtests.traffic.steps import Step

logger = logging.getLogger(__name__)

# A level's users are spawned at this many users/s (all of them within a fraction of a second).
SPAWN_RATE = 100.0


class SweepProfile(Profile):
    """What TrafficShape's machinery expects of a profile; the levels' timing is adaptive."""

    def __init__(self, shape: SweepShape, kind: str) -> None:
        self.shape = shape
        self.kind = kind

    def target_at(self, t: float) -> float | None:
        controller = self.shape.controller
        return None if controller is None else controller.level

    def steps(self) -> list[Step]:
        return []


class SweepShape(TrafficShape):
    """A stabilised sweep: `--load-shape sweep --shape-args "levels=1;2;4;8,stability=10"`.

    Follows the run it is selected for through `run_started`, `window_closed`,
    `run_stopping` and `run_finished` (master or single process).
    """

    name = "sweep"
    keys = SWEEP_KEYS

    def __init__(self, events: SuiteEvents, settings: Callable[[], Settings]) -> None:
        super().__init__(events, settings)
        events.run_started.add_listener(self._on_run_started)
        events.window_closed.add_listener(self._on_window_closed)
        events.run_stopping.add_listener(self._on_run_stopping)
        events.run_finished.add_listener(self._on_run_finished)

    @classmethod
    def parse_args(cls, text: str | None) -> dict[str, Any]:
        return parse_sweep_args(text)

    def _begin_run(self) -> None:
        super()._begin_run()
        previous = getattr(self, "snapshots", None)
        if previous is not None:
            previous.stop()  # a web UI run before this one
        self.controller: SweepController | None = None
        self.run: RunStarted | None = None
        self.stopped_at: float | None = None
        self.window_s = 1.0
        self.snapshots: BoundarySnapshots | None = None
        self.level_starts: list[tuple[int, float, float]] = []  # (index, level, Unix time)
        self.finished_at: float | None = None

    def load(self) -> Profile:
        settings = self.settings()
        self.args = self.parse_args(settings.shape_args)
        kind = self.args["kind"]
        if kind == RATE:
            self.args.setdefault("users", rate_shape_users(self.name, settings))
        self.window_s = settings.window_s
        self.controller = SweepController(
            levels=list(self.args["levels"]),
            kind=kind,
            stability_percent=self.args["stability"],
            max_trials=self.args["max_trials"],
            latency_limit_ms=self.args["latency_limit_ms"],
            settle=self.args["settle"],
            server_delta=self._server_delta,
        )
        self.profile = SweepProfile(self, kind)
        return self.profile

    # -- the run, from the spine ------------------------------------------------------------
    def selected(self) -> bool:
        """Whether this is the environment's shape (every suite shape listens; one is chosen)."""
        runner = self.runner
        return runner is not None and getattr(runner.environment, "shape_class", None) is self

    def _on_run_started(self, run: RunStarted, **_kwargs: Any) -> None:
        """Follow the run's closed windows; snapshot Triton's statistics at window boundaries."""
        if not self.selected():
            return
        if self.profile is None:
            self.load()
        self.run, self.stopped_at = run, None
        self.window_s = run.window_s
        if self.snapshots is not None:
            self.snapshots.stop()
        self.snapshots = BoundarySnapshots(run.snapshot_now, run.server_delta, self.window_s)
        self.snapshots.start()

    def _on_run_stopping(self, stopped_at: float, **_kwargs: Any) -> None:
        if self.run is not None:
            self.stopped_at = stopped_at

    def _on_run_finished(self, path: Path, **_kwargs: Any) -> None:
        if self.run is not None and Path(path) == Path(self.run.path):
            self.run = None  # its directory is complete: nothing more is written there
            if self.snapshots is not None:
                self.snapshots.stop()

    def _server_delta(self, start_s: float, end_s: float) -> dict[str, Any]:
        return self.snapshots.delta(start_s, end_s) if self.snapshots is not None else {}

    def _on_window_closed(self, start_s: float, end_s: float, endpoints: dict[str, EndpointStats], **_kw: Any) -> None:
        controller = self.controller
        if self.run is None or controller is None or controller.done:
            return
        if self.stopped_at is not None and start_s + self.window_s > self.stopped_at + 1e-6:
            return  # the run's last window, cut short by the stop: not a full trial
        result = controller.on_window(start_s, self.window_s, endpoints)
        if result is None:
            return
        print(progress_line(result, len(controller.levels), controller.results), flush=True)
        if controller.done and self.snapshots is not None:
            self.snapshots.stop()
        self.write_results()

    def write_results(self) -> None:
        """sweep.json and sweep.csv, rewritten as each level ends."""
        run = self.run
        if run is None or self.controller is None:
            return
        try:
            sweep_files.write(run.path, self.controller, relative_to=run.started_at, settings=self.settings_json())
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
        users = self.args["users"] if controller.kind == RATE else int(level)
        return users, SPAWN_RATE

    def _start_level(self, controller: SweepController, level: float) -> None:
        now = time.time()
        if controller.kind == RATE:
            self._last_rate = level
            self.events.target_rate_changed.fire(rate=level)
        controller.start_level(now, self.window_s)
        self.level_starts.append((controller.index, level, now))
        label = "concurrency" if controller.kind == USERS else "request rate"
        print(f"sweep: {label} {level:g} ({controller.index + 1}/{len(controller.levels)}) started", flush=True)
        step = Step(controller.index, now - self.started_at, now - self.started_at, level)
        self.passed_steps.append(step)
        self.events.step_started.fire(step=step)

    def record(
        self, relative_to: float | None = None, final: bool = False, ended_at: float | None = None
    ) -> dict[str, Any]:
        """steps.json: one step per level started, from its change to the next one's (or the
        run's end, `ended_at`, or now)."""
        offset = 0.0 if relative_to is None else relative_to
        now = ended_at or time.time()
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
        return self.record_steps(steps)


def progress_line(result: LevelResult, total: int, results: list[LevelResult]) -> str:
    """One line per finished level, e.g.
    `sweep: concurrency 2 (2/8): stable after 4 windows: 99.5 infer/sec, p95 20871 usec`."""
    label = "concurrency" if result.kind == USERS else "request rate"
    verdict = f"stable after {result.windows} windows" if result.stable else f"unstable after {result.windows} windows"
    line = (
        f"sweep: {label} {result.level:g} ({len(results)}/{total}): {verdict}: "
        f"{result.throughput_infer_per_s:.6g} infer/sec, p95 {int(result.p95_us)} usec"
    )
    if result.over_latency_limit:
        line += " (over the latency limit: sweep stops)"
    return line
