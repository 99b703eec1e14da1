"""The Locust side of a load shape: `TrafficShape` turns a profile into Locust's ticks.

    locust -f locustfile.py --headless TritonHttpUser --model identity \\
        --load-shape steps --shape-args "targets=1;2;4;8,step_s=30"

A shape holds a user count (closed loop), or with `kind=rate` hands a request rate to
open-loop traffic and holds a constant user count, `users=` (default `-u`). It says so on
the suite's event spine (loadtests/events.py), handed to it at install: every step that
begins fires `step_started`, every new rate `target_rate_changed`. What it reads from the
options comes from `settings()`, re-read at each run's first tick (the web UI may have
changed them). The shapes and their `--shape-args` are listed in docs/guides/traffic.md.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import gevent
from locust import LoadTestShape

from loadtests.config.settings import OPEN_LOOP_HINT, Settings
from loadtests.errors import SpecError
from loadtests.events import SuiteEvents
from loadtests.traffic.profiles import RATE, Profile
from loadtests.traffic.shape_args import PROFILE_KEYS, profile_args
from loadtests.traffic.steps import Step, steps_json

logger = logging.getLogger(__name__)

# A shape's user count changes at most once per tick (Locust ticks about once a second).
TICK_S = 1.0
# tick() looks this far ahead, so a change at second N happens at the tick nearest N. Ticks
# on a distributed master fall just before whole seconds (MasterRunner.start restarts the
# shape's clock at test_start, just after the first tick): without it, every step would
# start a whole tick late.
LOOKAHEAD_S = TICK_S / 2


def round_users(target: float) -> int:
    """A user count from a target: rounded half up, never negative."""
    return max(0, math.floor(target + 0.5))


class TrafficShape(LoadTestShape):
    """Base of the suite's shapes: the profile from `--shape-args`, read on a run's first tick.

    `tick()` returns `(users, spawn_rate)` while the profile runs, None when it is over.
    After the first tick it reads the profile half a tick ahead (LOOKAHEAD_S), so each
    change happens at the tick nearest to it.

    The profile's clock starts when Locust's test_start is over (every listener, the suite's
    run directory and any of the user's own setup), not at the first tick: until then tick()
    holds the first target. A single process fires test_start in the greenlet that spawns
    the users, and Locust ticks the shape meanwhile; a step that began there would start
    before any user, and its start() would kill that greenlet mid-test_start (the run then
    began again, in a second directory). A master fires it inside the first tick's start().

    `passed_steps` holds every step started so far in this run and `record()` what
    `steps.json` holds. Locust's `start_shape` calls `reset_time()`, which begins a new
    run: the web UI may have changed `--shape-args` since the last one.
    """

    abstract = True
    # -t/--run-time caps a shape; -u is the constant user count of a rate shape. Also
    # keeps the web UI's user/run-time fields visible, so "no shape" can be chosen there.
    use_common_options = True
    name: ClassVar[str] = ""
    keys: ClassVar[tuple[str, ...]] = ()  # the --shape-args keys it accepts

    def __init__(self, events: SuiteEvents, settings: Callable[[], Settings]) -> None:
        super().__init__()
        self.events = events
        self.settings = settings
        self._begin_run()

    @classmethod
    def parse_args(cls, text: str | None) -> dict[str, Any]:
        """`--shape-args` checked, defaults filled in; raises SpecError (see `profile_args`)."""
        return profile_args(cls.name, text)[0]

    def _begin_run(self) -> None:
        self.args: dict[str, Any] = {}
        self.profile: Profile | None = None
        self.passed_steps: list[Step] = []
        self.started_at = time.time()
        self._plan: list[Step] = []
        self._run_time_s: float | None = None
        self._last_tick: tuple[int, float] | None = None
        self._last_rate: float | None = None
        # The first target, held while Locust's test_start runs (None once the clock runs).
        self._held: tuple[int, float] | None = None
        self._clock_running = False
        self._clock_origin = 0.0  # Locust's run time (get_run_time) at the profile's time 0

    def reset_time(self) -> None:
        super().reset_time()
        runner = self.runner
        if self.profile is not None and getattr(runner, "shape_greenlet", None) is gevent.getcurrent():
            # MasterRunner.start restarts the clock at test_start, inside this run's first
            # tick: the same run, on the clock of the run directory.
            self.started_at, self._clock_origin = time.time(), 0.0
            return
        self._begin_run()  # Locust's start_shape: a new run (the web UI may have changed the args)

    @property
    def target_kind(self) -> str:
        """What the target is: "users" (the user count) or "rate" (requests/s, for open-loop traffic)."""
        if self.profile is None:
            self.load()
        return self.profile.kind

    def load(self) -> Profile:
        """Read `--shape-args` from the settings; raises SpecError."""
        settings = self.settings()
        self.args, self.profile = profile_args(self.name, settings.shape_args)
        self._plan = self.profile.steps()
        self._run_time_s = settings.run_time_s
        if self.profile.kind == RATE:
            self.args.setdefault("users", rate_shape_users(self.name, settings))
        return self.profile

    def loaded(self) -> bool:
        """Load the profile at a run's first tick; False (exit code 2 set) when the args are bad."""
        if self.profile is None:
            try:
                self.load()
            except SpecError as error:
                # Headless runs were checked at init; this is a web UI run with bad input.
                logger.error("error: %s", error)
                self.runner.environment.process_exit_code = error.exit_code
                return False
        return True

    def tick(self) -> tuple[int, float] | None:
        if not self.loaded():
            return None
        if self._held is not None:
            return self._held  # test_start is not over: the same tick, so Locust starts nothing
        t = self.get_run_time() - self._clock_origin
        if t >= LOOKAHEAD_S:  # the first tick starts the profile's first target
            t += LOOKAHEAD_S
        if self._run_time_s is not None and t >= self._run_time_s:
            return None
        target = self.profile.target_at(t)
        if target is None:
            return None
        self._pass_steps(t)
        if self.profile.kind == RATE:
            self.set_rate(target)
            users = self.args["users"]
        else:
            users = round_users(target)
        first = users, self._spawn_rate(users)
        if not self._clock_running:
            self._held = first
            self._start_clock_after_test_start()
        return first

    def _start_clock_after_test_start(self) -> None:
        """Listen last to test_start (after the user's own listeners too): the clock starts there."""
        hook = self.runner.environment.events.test_start if self.runner is not None else None
        if hook is None:
            self._start_clock()
            return
        with contextlib.suppress(ValueError):  # not there yet
            hook.remove_listener(self._test_start_over)
        hook.add_listener(self._test_start_over)

    def _test_start_over(self, **_kwargs: Any) -> None:
        if self._held is not None:
            self._start_clock()

    def _start_clock(self) -> None:
        """Time 0 of the profile is now: the first target's users start spawning."""
        self._clock_origin = self.get_run_time()
        self.started_at = time.time()
        self._held, self._clock_running = None, True

    def set_rate(self, rate: float) -> None:
        """A kind=rate target: `target_rate_changed`, once per change."""
        if rate != self._last_rate:
            self._last_rate = rate
            self.events.target_rate_changed.fire(rate=rate)

    def _spawn_rate(self, users: int) -> float:
        if "spawn_rate" in self.args:
            return self.args["spawn_rate"]
        if self._last_tick is not None and self._last_tick[0] == users:
            return self._last_tick[1]  # an unchanged tick: Locust does not restart the spawn
        current = self.get_current_user_count() if self.runner is not None else 0
        rate = float(max(1, abs(users - current)) / TICK_S)
        self._last_tick = (users, rate)
        return rate

    def _pass_steps(self, t: float) -> None:
        for step in self._plan[len(self.passed_steps) :]:
            if step.start_s > t:
                break
            self.start_step(step)

    def start_step(self, step: Step) -> None:
        """A step begins: in `passed_steps`, in the log, and `step_started` on the spine."""
        self.passed_steps.append(step)
        kind = self.profile.kind if self.profile is not None else ""
        logger.info(
            "shape %s: step %d (%g-%g s): %g %s", self.name, step.index, step.start_s, step.end_s, step.target, kind
        )
        self.events.step_started.fire(step=step)

    def record(
        self, relative_to: float | None = None, final: bool = False, ended_at: float | None = None
    ) -> dict[str, Any]:
        """What `steps.json` holds: the shape, its args, and the steps started so far.

        `relative_to` (a Unix time, e.g. the run directory's start) is time 0 of the step
        times, so they line up with `timeseries.csv`; `final` clips the last step at `ended_at`
        (a Unix time: the run's end), or now.
        """
        offset_s = self.started_at - relative_to if relative_to is not None else 0.0
        end_s = (ended_at or time.time()) - self.started_at if final else None
        return self.record_steps(steps_json(self.passed_steps, end_s=end_s, offset_s=offset_s))

    def record_steps(self, steps: list[dict]) -> dict[str, Any]:
        """steps.json around its `steps` rows."""
        return {
            "shape": self.name,
            "kind": self.profile.kind if self.profile is not None else None,
            "args": dict(self.args),
            "started_at": self.started_at,
            "steps": steps,
        }


def rate_shape_users(name: str, settings: Settings, what: str = "with kind=rate") -> int:
    """The constant user count of a rate shape (`-u`, at least 1); raises SpecError in closed loop."""
    if not settings.open_loop:
        raise SpecError(
            f"--load-shape {' '.join(filter(None, (name, what)))} needs open-loop traffic ({OPEN_LOOP_HINT})"
        )
    return int(settings.num_users or 1)


class StepsShape(TrafficShape):
    """A staircase: `--load-shape steps --shape-args "targets=1;2;4;8,step_s=30"`."""

    name = "steps"
    keys = PROFILE_KEYS["steps"]


class RampShape(TrafficShape):
    """Linear: `--load-shape ramp --shape-args "start=1,end=32,duration_s=120,hold_s=60"`."""

    name = "ramp"
    keys = PROFILE_KEYS["ramp"]


class SpikeShape(TrafficShape):
    """A burst: `--load-shape spike --shape-args "baseline=2,peak=20,at_s=60,spike_s=30,duration_s=180"`."""

    name = "spike"
    keys = PROFILE_KEYS["spike"]


class SineShape(TrafficShape):
    """A diurnal curve: `--load-shape sine --shape-args "baseline=8,amplitude=6,period_s=600,duration_s=1800"`."""

    name = "sine"
    keys = PROFILE_KEYS["sine"]


class TraceShape(TrafficShape):
    """A replay: `--load-shape trace --shape-args "file=traffic.csv,hold_s=30"` (CSV `time_s,users|rate`)."""

    name = "trace"
    keys = PROFILE_KEYS["trace"]
