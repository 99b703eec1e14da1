"""Load shapes: a target (users, or a request rate) as a function of elapsed time.

    locust -f locustfile.py --headless TritonHttpUser --model identity \\
        --load-shape steps --shape-args "targets=1;2;4;8,step_s=30"

Shapes and their `--shape-args` (`key=value,key=value`; lists use `;`), and their steps
(the segments `steps.json` records):

- `steps`: `targets=1;2;4` or `start=1,step=2,count=4`; `step_s` (default 30). One step
  per target.
- `ramp`: `start` (default 0), `end`, `duration_s`, `hold_s` (0), `segments` (1). The ramp
  in `segments` equal parts (target: the level at the part's end), then the hold.
- `spike`: `baseline`, `peak`, `at_s`, `spike_s`, `duration_s`. Baseline, spike, baseline.
- `sine`: `baseline`, `amplitude`, `period_s`, `duration_s` (one period). One step per
  period (target: the baseline).
- `trace`: `file` (CSV with a header `time_s,users` or `time_s,rate`), `hold_s` (0),
  `scale` (1). One step per row.

Every shape also takes `spawn_rate` (users/s; default: fast enough to reach each new
user count within about a second) and `kind=users|rate` (a trace takes its kind from
its header). With `kind=rate` the target is a request rate: the shape hands it to
`set_rate_target` (open-loop traffic) and holds a constant user count, `users=`
(default `-u`). A sine is clamped at 0; user counts are rounded. `-t/--run-time`, when
given, ends a shape early.

Locust runs any shape class it finds in the locustfile's namespace (the first one when
there are several: locust/main.py, `merge_locustfiles_content`), and shape classes cannot
be named on the command line like user classes. So the locustfile imports none:
`install_shape` selects one at init from `--load-shape`, the web UI's `load_shape` field
selects one when a test starts, and `--class-picker`'s shape dropdown lists them all.
Without a shape, `-u/-r/-t` runs are unchanged.
"""

from __future__ import annotations

import bisect
import csv
import logging
import math
import sys
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gevent
from locust import LoadTestShape

from loadtests.errors import SpecError

__all__ = [
    "NO_SHAPE",
    "RATE",
    "SHAPES",
    "SHAPE_KEYS",
    "SHAPE_NAMES",
    "USERS",
    "Piecewise",
    "Profile",
    "Ramp",
    "RampShape",
    "Sine",
    "SineShape",
    "SpikeShape",
    "Step",
    "StepsShape",
    "TraceShape",
    "TrafficShape",
    "add_arguments",
    "build_profile",
    "install",
    "install_shape",
    "parse_shape_args",
    "read_trace",
    "register_shape",
    "set_rate_target",
    "spike",
    "staircase",
    "steps_json",
]

logger = logging.getLogger(__name__)

USERS = "users"
RATE = "rate"
# The open-loop --traffic modes (arrival processes); "closed" is the other one.
OPEN_LOOP_MODES = ("constant", "poisson", "gamma")
OPEN_LOOP_HINT = "--traffic " + "|".join(OPEN_LOOP_MODES)
TARGET_KINDS = (USERS, RATE)
NO_SHAPE = "none"
DEFAULT_STEP_S = 30.0
# A shape's user count changes at most once per tick (Locust ticks about once a second).
TICK_S = 1.0
# tick() looks this far ahead, so a change at second N happens at the tick nearest N. Ticks
# on a distributed master fall just before whole seconds (MasterRunner.start restarts the
# shape's clock at test_start, just after the first tick): without it, every step would
# start a whole tick late.
LOOKAHEAD_S = TICK_S / 2

set_rate_target: Callable[[float], None] | None = None
"""Where a `kind=rate` shape sends its target request rate (requests/s, all workers).

Open-loop traffic sets it; a rate shape refuses to start while it is None.
"""


@dataclass(frozen=True)
class Step:
    """One segment of a shape: `target` holds over [start_s, end_s) (seconds from the start).

    For a ramp segment, `target` is the level reached at the segment's end; for a sine
    period, the baseline.
    """

    index: int
    start_s: float
    end_s: float
    target: float

    def __post_init__(self) -> None:
        for name in ("start_s", "end_s", "target"):
            object.__setattr__(self, name, float(getattr(self, name)))


def steps_json(steps: list[Step], end_s: float | None = None, offset_s: float = 0.0) -> list[dict]:
    """Steps as JSON-ready dicts, times shifted by `offset_s`; `end_s` (when the run ended,
    before the shift) clips the last ones.

    >>> steps_json([Step(0, 0.0, 30.0, 4.0)], end_s=12.5)
    [{'index': 0, 'start_s': 0.0, 'end_s': 12.5, 'target': 4.0}]
    """
    rows = []
    for step in steps:
        end = step.end_s if end_s is None else max(step.start_s, min(step.end_s, end_s))
        rows.append(
            {
                "index": step.index,
                "start_s": round(step.start_s + offset_s, 3),
                "end_s": round(end + offset_s, 3),
                "target": step.target,
            }
        )
    return rows


# -- profiles: pure functions of elapsed time ------------------------------------------
class Profile(ABC):
    """A target as a pure function of the time since the test started."""

    kind: str

    @abstractmethod
    def target_at(self, t: float) -> float | None:
        """The target at `t` seconds, or None once the shape is over."""

    @abstractmethod
    def steps(self) -> list[Step]:
        """The segments of the shape, in time order."""

    @property
    def end_s(self) -> float:
        """When the shape is over (seconds from the start)."""
        steps = self.steps()
        return steps[-1].end_s if steps else 0.0


@dataclass(frozen=True)
class Piecewise(Profile):
    """Step-wise constant: each step's target holds until the next step (steps, spike, trace).

    >>> profile = staircase([1, 3], step_s=3)
    >>> profile.target_at(0), profile.target_at(3.5), profile.target_at(6)
    (1.0, 3.0, None)
    """

    segments: tuple[Step, ...]
    kind: str = USERS

    def target_at(self, t: float) -> float | None:
        if not self.segments or t >= self.segments[-1].end_s:
            return None
        i = bisect.bisect_right([s.start_s for s in self.segments], max(t, 0.0)) - 1
        # Before the first step (a trace whose first row is after 0): no load yet.
        return self.segments[i].target if i >= 0 else 0.0

    def steps(self) -> list[Step]:
        return list(self.segments)


@dataclass(frozen=True)
class Ramp(Profile):
    """Linear from `start` to `end` over `duration_s`, then `end` for `hold_s`.

    >>> Ramp(0, 10, duration_s=10).target_at(2.5)
    2.5
    """

    start: float
    end: float
    duration_s: float
    hold_s: float = 0.0
    segments: int = 1
    kind: str = USERS

    def target_at(self, t: float) -> float | None:
        t = max(t, 0.0)
        if t < self.duration_s:
            return self.start + (self.end - self.start) * t / self.duration_s
        if t < self.duration_s + self.hold_s:
            return float(self.end)
        return None

    def steps(self) -> list[Step]:
        part = self.duration_s / self.segments
        rise = self.end - self.start
        steps = [
            Step(k, k * part, (k + 1) * part, self.start + rise * (k + 1) / self.segments) for k in range(self.segments)
        ]
        if self.hold_s > 0:
            steps.append(Step(self.segments, self.duration_s, self.duration_s + self.hold_s, float(self.end)))
        return steps


@dataclass(frozen=True)
class Sine(Profile):
    """`baseline + amplitude * sin(2π t / period_s)` for `duration_s` (default one period), >= 0.

    >>> Sine(10, 5, period_s=60, duration_s=120).target_at(15)
    15.0
    """

    baseline: float
    amplitude: float
    period_s: float
    duration_s: float | None = None
    kind: str = USERS

    def __post_init__(self) -> None:
        if self.duration_s is None:
            object.__setattr__(self, "duration_s", self.period_s)

    def target_at(self, t: float) -> float | None:
        t = max(t, 0.0)
        if t >= self.duration_s:
            return None
        return max(0.0, self.baseline + self.amplitude * math.sin(2 * math.pi * t / self.period_s))

    def steps(self) -> list[Step]:
        count = math.ceil(self.duration_s / self.period_s - 1e-9)
        return [
            Step(i, i * self.period_s, min((i + 1) * self.period_s, self.duration_s), float(self.baseline))
            for i in range(count)
        ]


def staircase(targets: list[float], step_s: float, kind: str = USERS) -> Piecewise:
    """Each target held for `step_s` seconds, in order."""
    return Piecewise(tuple(Step(i, i * step_s, (i + 1) * step_s, float(v)) for i, v in enumerate(targets)), kind)


def spike(baseline: float, peak: float, at_s: float, spike_s: float, duration_s: float, kind: str = USERS) -> Piecewise:
    """`baseline`, then `peak` from `at_s` for `spike_s`, then `baseline` until `duration_s`."""
    bounds = [(0.0, at_s, baseline), (at_s, at_s + spike_s, peak), (at_s + spike_s, duration_s, baseline)]
    parts = [(a, b, float(v)) for a, b, v in bounds if b > a]
    return Piecewise(tuple(Step(i, a, b, v) for i, (a, b, v) in enumerate(parts)), kind)


def read_trace(path: str | Path, hold_s: float = 0.0, scale: float = 1.0) -> Piecewise:
    """A CSV with a header `time_s,users` or `time_s,rate`, replayed step-wise.

    Each row's value holds until the next row's time; the shape ends at the last row's
    time plus `hold_s` (so with no hold the last row only marks the end). Blank lines and
    lines starting with `#` are skipped. Raises SpecError with the file and line.
    """
    where = f"--shape-args for trace: {path}"
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise SpecError(f"{where}: no such file") from None
    except OSError as error:
        raise SpecError(f"{where}: {error.strerror}") from None
    rows = [
        (number, [cell.strip() for cell in row])
        for number, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and any(cell.strip() for cell in row) and not row[0].strip().startswith("#")
    ]
    if not rows:
        raise SpecError(f"{where}: empty file (expected a header time_s,users or time_s,rate)")
    number, header = rows[0]
    header = [cell.lower() for cell in header]
    if len(header) != 2 or header[0] != "time_s" or header[1] not in TARGET_KINDS:
        raise SpecError(f"{where} line {number}: header {','.join(header)!r} is not time_s,users or time_s,rate")
    kind = header[1]
    points: list[tuple[float, float]] = []
    for number, row in rows[1:]:
        if len(row) != 2:
            raise SpecError(f"{where} line {number}: expected 2 columns (time_s,{kind}), got {len(row)}")
        try:
            t, value = float(row[0]), float(row[1])
        except ValueError:
            raise SpecError(f"{where} line {number}: {','.join(row)!r} is not two numbers") from None
        if not (math.isfinite(t) and math.isfinite(value)) or t < 0 or value < 0:
            raise SpecError(f"{where} line {number}: time_s and {kind} must be finite and >= 0")
        if points and t <= points[-1][0]:
            raise SpecError(f"{where} line {number}: time_s {row[0]} is not after the previous row's {points[-1][0]:g}")
        points.append((t, value * scale))
    if not points:
        raise SpecError(f"{where}: no rows after the header")
    ends = [t for t, _ in points[1:]] + [points[-1][0] + hold_s]
    steps = [Step(i, t, end, v) for i, ((t, v), end) in enumerate(zip(points, ends, strict=True)) if end > t]
    if not steps:
        raise SpecError(f"{where}: a single row lasts no time: add rows or hold_s")
    return Piecewise(tuple(steps), kind)


# -- --shape-args -------------------------------------------------------------------------
def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return value


def _level(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _positive(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise ValueError("must be positive")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("is not a whole number") from None
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _targets(text: str) -> list[float]:
    parts = [part.strip() for part in text.split(";") if part.strip()]
    if not parts:
        raise ValueError("is empty (expected e.g. targets=1;2;4)")
    try:
        return [_level(part) for part in parts]
    except ValueError:
        raise ValueError("must be numbers >= 0 separated by ';' (e.g. targets=1;2;4)") from None


def _kind(text: str) -> str:
    if text not in TARGET_KINDS:
        raise ValueError(f"must be one of {', '.join(TARGET_KINDS)}")
    return text


def _file(text: str) -> str:
    if not text:
        raise ValueError("is empty")
    return text


# key -> converter (raises ValueError with what is wrong)
_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "targets": _targets,
    "start": _level,
    "step": _number,  # a staircase may go down
    "count": _count,
    "step_s": _positive,
    "end": _level,
    "duration_s": _positive,
    "hold_s": _level,
    "segments": _count,
    "baseline": _level,
    "peak": _level,
    "at_s": _level,
    "spike_s": _positive,
    "amplitude": _number,
    "period_s": _positive,
    "file": _file,
    "scale": _positive,
    "kind": _kind,
    "spawn_rate": _positive,
    "users": _count,
}
_COMMON = ("kind", "spawn_rate", "users")
SHAPE_KEYS: dict[str, tuple[str, ...]] = {
    "steps": ("targets", "start", "step", "count", "step_s", *_COMMON),
    "ramp": ("start", "end", "duration_s", "hold_s", "segments", *_COMMON),
    "spike": ("baseline", "peak", "at_s", "spike_s", "duration_s", *_COMMON),
    "sine": ("baseline", "amplitude", "period_s", "duration_s", *_COMMON),
    "trace": ("file", "hold_s", "scale", "spawn_rate", "users"),
}
SHAPE_NAMES = tuple(SHAPE_KEYS)


def shape_name(name: str) -> str:
    """`steps`, `Steps` or `StepsShape` -> `steps`; raises SpecError for an unknown shape."""
    key = str(name).strip().lower().removesuffix("shape")
    if key not in SHAPE_KEYS:
        raise SpecError(f"--load-shape {name!r} is not one of: {', '.join(SHAPE_NAMES)}")
    return key


class ShapeArgError(ValueError):
    """A bad `key=value` in --shape-args (the caller adds which shape and its accepted keys)."""


_ArgError = ShapeArgError


def split_shape_args(
    text: str | None, keys: tuple[str, ...], converters: dict[str, Callable[[str], Any]] | None = None
) -> dict[str, Any]:
    """`key=value,key=value` -> {key: converted value}; raises ShapeArgError naming the bad item."""
    converters = _CONVERTERS if converters is None else converters
    args: dict[str, Any] = {}
    for item in (part.strip() for part in str(text or "").split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise _ArgError(f"{item!r} is not key=value")
        if key not in keys:
            raise _ArgError(f"unknown key {key!r}")
        if key in args:
            raise _ArgError(f"{key} is given twice")
        try:
            args[key] = converters[key](value)
        except ValueError as error:
            raise _ArgError(f"{key}={value!r} {error}") from None
    return args


_split_args = split_shape_args


def _require(args: dict[str, Any], *keys: str) -> None:
    missing = [key for key in keys if key not in args]
    if missing:
        raise _ArgError("missing " + ", ".join(f"{key}=" for key in missing))


def _complete(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Check the keys together and fill in defaults; raise _ArgError."""
    if name != "trace":
        args.setdefault("kind", USERS)
    if name == "steps":
        if "targets" in args and {"start", "step", "count"} & args.keys():
            raise _ArgError("give either targets= or start=,step=,count=, not both")
        if "targets" not in args:
            if not {"start", "step", "count"} & args.keys():
                raise _ArgError("missing targets= (or start=,step=,count=)")
            _require(args, "start", "step", "count")
            targets = [args["start"] + i * args["step"] for i in range(args["count"])]
            if min(targets) < 0:
                raise _ArgError(f"start={args['start']:g},step={args['step']:g} goes below 0")
            args["targets"] = targets
        args.setdefault("step_s", DEFAULT_STEP_S)
    elif name == "ramp":
        _require(args, "end", "duration_s")
        args.setdefault("start", 0.0)
        args.setdefault("hold_s", 0.0)
        args.setdefault("segments", 1)
    elif name == "spike":
        _require(args, "baseline", "peak", "at_s", "spike_s", "duration_s")
        if args["at_s"] + args["spike_s"] > args["duration_s"]:
            raise _ArgError("at_s + spike_s must not exceed duration_s")
    elif name == "sine":
        _require(args, "baseline", "amplitude", "period_s")
        args.setdefault("duration_s", args["period_s"])
    elif name == "trace":
        _require(args, "file")
        args.setdefault("hold_s", 0.0)
        args.setdefault("scale", 1.0)
    return args


def build_profile(name: str, args: dict[str, Any]) -> Profile:
    """The profile of a shape from its completed args (see `parse_shape_args`)."""
    name = shape_name(name)
    kind = args.get("kind", USERS)
    if name == "steps":
        return staircase(args["targets"], args["step_s"], kind)
    if name == "ramp":
        return Ramp(args["start"], args["end"], args["duration_s"], args["hold_s"], args["segments"], kind)
    if name == "spike":
        return spike(args["baseline"], args["peak"], args["at_s"], args["spike_s"], args["duration_s"], kind)
    if name == "sine":
        return Sine(args["baseline"], args["amplitude"], args["period_s"], args["duration_s"], kind)
    return read_trace(args["file"], args["hold_s"], args["scale"])


def parse_shape_args(name: str, text: str | None) -> dict[str, Any]:
    """Parse and check `--shape-args` for a shape; return the args with defaults filled in.

    The result always has `kind` ("users" or "rate"; a trace's from its header). A trace
    file is read here too, so every error shows before any load.

        >>> parse_shape_args("steps", "targets=1;2,step_s=5")
        {'targets': [1.0, 2.0], 'step_s': 5.0, 'kind': 'users'}

    Raises SpecError naming the shape, the bad key and the accepted keys, e.g.
    "--shape-args for ramp: duration_s='-5' must be positive (accepted keys: start, end, ...)".
    """
    return _parse(name, text)[0]


def _parse(name: str, text: str | None) -> tuple[dict[str, Any], Profile | None]:
    name = shape_name(name)
    if name in _OWN_PARSERS:
        return _OWN_PARSERS[name](text), None  # the shape builds its own state in load()
    keys = SHAPE_KEYS[name]
    try:
        args = _complete(name, _split_args(text or "", keys))
        if args.get("kind") == USERS and "users" in args:
            raise _ArgError("users= applies to kind=rate only (the target is the user count)")
    except _ArgError as error:
        raise SpecError(f"--shape-args for {name}: {error} (accepted keys: {', '.join(keys)})") from None
    profile = build_profile(name, args)
    args["kind"] = profile.kind
    if profile.kind == USERS and "users" in args:
        raise SpecError(f"--shape-args for {name}: users= applies to a rate trace only (this trace is time_s,users)")
    return args, profile


# -- Locust ----------------------------------------------------------------------------------
def round_users(target: float) -> int:
    """A user count from a target: rounded half up, never negative."""
    return max(0, math.floor(target + 0.5))


class TrafficShape(LoadTestShape):
    """Base of the suite's shapes: the profile from `--shape-args`, read on a run's first tick.

    `tick()` returns `(users, spawn_rate)` while the profile runs, None when it is over.
    After the first tick it reads the profile half a tick ahead (LOOKAHEAD_S), so each
    change happens at the tick nearest to it.

    Step boundaries: `passed_steps` (every step started so far in this run), `on_step(step)`
    (called as each step starts) and `record()` (what `steps.json` holds). Locust's
    `start_shape` calls `reset_time()`, which begins a new run: the web UI may have
    changed `--shape-args` since the last one.
    """

    abstract = True
    # -t/--run-time caps a shape; -u is the constant user count of a rate shape. Also
    # keeps the web UI's user/run-time fields visible, so "no shape" can be chosen there.
    use_common_options = True
    name: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.on_step: Callable[[Step], None] | None = None
        self._begin_run()

    def _begin_run(self) -> None:
        self.args: dict[str, Any] = {}
        self.profile: Profile | None = None
        self.passed_steps: list[Step] = []
        self.started_at = time.time()
        self._plan: list[Step] = []
        self._run_time_s: float | None = None
        self._last_tick: tuple[int, float] | None = None
        self._last_rate: float | None = None

    def reset_time(self) -> None:
        super().reset_time()
        runner = self.runner
        if self.profile is not None and getattr(runner, "shape_greenlet", None) is gevent.getcurrent():
            # MasterRunner.start restarts the clock at test_start, inside this run's first
            # tick: the same run, on the clock of the run directory.
            self.started_at = time.time()
            return
        self._begin_run()  # Locust's start_shape: a new run (the web UI may have changed the args)

    @property
    def target_kind(self) -> str:
        """What the target is: "users" (the user count) or "rate" (requests/s, for open-loop traffic)."""
        if self.profile is None:
            self.load()
        return self.profile.kind

    def load(self) -> Profile:
        """Read `--shape-args` from the runner's options; raises SpecError."""
        options = self.runner.environment.parsed_options if self.runner is not None else None
        self.args, self.profile = _parse(self.name, getattr(options, "shape_args", "") or "")
        self._plan = self.profile.steps()
        run_time = getattr(options, "run_time", None)
        self._run_time_s = float(run_time) if run_time else None
        if self.profile.kind == RATE:
            if set_rate_target is None:
                raise SpecError(f"--load-shape {self.name} with kind=rate needs open-loop traffic (--traffic ...)")
            self.args.setdefault("users", int(getattr(options, "num_users", 0) or 1))
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
        t = self.get_run_time()
        if t >= LOOKAHEAD_S:  # the first tick starts the profile's first target
            t += LOOKAHEAD_S
        if self._run_time_s is not None and t >= self._run_time_s:
            return None
        target = self.profile.target_at(t)
        if target is None:
            return None
        self._pass_steps(t)
        if self.profile.kind == RATE:
            if target != self._last_rate:
                set_rate_target(target)
                self._last_rate = target
            users = self.args["users"]
        else:
            users = round_users(target)
        return users, self._spawn_rate(users)

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
            self.passed_steps.append(step)
            logger.info(
                "shape %s: step %d (%g-%g s): %g %s",
                self.name,
                step.index,
                step.start_s,
                step.end_s,
                step.target,
                self.profile.kind,
            )
            if self.on_step is not None:
                try:
                    self.on_step(step)
                except Exception:  # a recording problem must not stop the load
                    logger.exception("shape %s: on_step failed", self.name)

    def record(self, relative_to: float | None = None, final: bool = False) -> dict[str, Any]:
        """What `steps.json` holds: the shape, its args, and the steps started so far.

        `relative_to` (a Unix time, e.g. the run directory's start) is time 0 of the step
        times, so they line up with `timeseries.csv`; `final` clips the last step at now.
        """
        offset_s = self.started_at - relative_to if relative_to is not None else 0.0
        end_s = time.time() - self.started_at if final else None
        return {
            "shape": self.name,
            "kind": self.profile.kind if self.profile is not None else None,
            "args": dict(self.args),
            "started_at": self.started_at,
            "steps": steps_json(self.passed_steps, end_s=end_s, offset_s=offset_s),
        }


class StepsShape(TrafficShape):
    """A staircase: `--load-shape steps --shape-args "targets=1;2;4;8,step_s=30"`."""

    name = "steps"


class RampShape(TrafficShape):
    """Linear: `--load-shape ramp --shape-args "start=1,end=32,duration_s=120,hold_s=60"`."""

    name = "ramp"


class SpikeShape(TrafficShape):
    """A burst: `--load-shape spike --shape-args "baseline=2,peak=20,at_s=60,spike_s=30,duration_s=180"`."""

    name = "spike"


class SineShape(TrafficShape):
    """A diurnal curve: `--load-shape sine --shape-args "baseline=8,amplitude=6,period_s=600,duration_s=1800"`."""

    name = "sine"


class TraceShape(TrafficShape):
    """A replay: `--load-shape trace --shape-args "file=traffic.csv,hold_s=30"` (CSV `time_s,users|rate`)."""

    name = "trace"


SHAPES: dict[str, type[TrafficShape]] = {
    cls.name: cls for cls in (StepsShape, RampShape, SpikeShape, SineShape, TraceShape)
}
# Shapes defined in their own modules parse their own --shape-args (name -> parse(text) -> args).
_OWN_PARSERS: dict[str, Callable[[str | None], dict[str, Any]]] = {}


def register_shape(
    cls: type[TrafficShape], keys: tuple[str, ...], parse: Callable[[str | None], dict[str, Any]]
) -> None:
    """Make a shape defined elsewhere selectable by --load-shape (loadtests/traffic/sweep.py does).

    `parse(text)` checks its `--shape-args` and returns them with defaults (raises SpecError);
    the shape's own `load()` builds its state from them.
    """
    global SHAPE_NAMES
    SHAPES[cls.name] = cls
    SHAPE_KEYS[cls.name] = keys
    SHAPE_NAMES = tuple(SHAPE_KEYS)
    _OWN_PARSERS[cls.name] = parse


# -- options and wiring ------------------------------------------------------------------
def add_arguments(parser) -> None:
    """Register `--load-shape` and `--shape-args` on Locust's parser (once).

    On the parser itself, not in an argument group: Locust's web UI form lists only
    options added by `LocustArgumentParser.add_argument` (it marks them include_in_web_ui).
    """
    if "--shape-args" in getattr(parser, "_option_string_actions", {}):
        return
    parser.add_argument(
        "--load-shape",
        env_var="LOCUST_LOAD_SHAPE",
        default=NO_SHAPE,
        choices=(NO_SHAPE, *SHAPE_NAMES),
        help=(
            "load shape: none (the -u/-r/-t users), steps, ramp, spike, sine, trace, sweep or capacity "
            "[env LOCUST_LOAD_SHAPE]"
        ),
    )
    parser.add_argument(
        "--shape-args",
        env_var="LOCUST_SHAPE_ARGS",
        default="",
        metavar="KEY=VALUE,...",
        help=(
            "the load shape's parameters, e.g. steps: targets=1;2;4;8,step_s=30 | "
            "ramp: start=1,end=32,duration_s=120,hold_s=60 | "
            "spike: baseline=2,peak=20,at_s=60,spike_s=30,duration_s=180 | "
            "sine: baseline=8,amplitude=6,period_s=600,duration_s=1800 | trace: file=trace.csv,hold_s=30; "
            "any: spawn_rate=N, kind=users|rate [env LOCUST_SHAPE_ARGS]"
        ),
    )


# One set of shape instances per Environment (the web UI's picker hands out these instances).
_installed: weakref.WeakKeyDictionary[Any, dict[str, TrafficShape]] = weakref.WeakKeyDictionary()


def install_shape(environment, web_ui=None, on_step: Callable[[Step], None] | None = None) -> TrafficShape | None:
    """Select the `--load-shape` at init (master or single process); raises SpecError.

    Every suite shape is listed in `environment.available_shape_classes` (the web UI's
    shape picker with `--class-picker`). Without the picker, the web UI's "load_shape"
    field selects the shape when a test starts. Returns the selected shape, if any.
    """
    from locust.runners import WorkerRunner

    options = environment.parsed_options
    if options is None or isinstance(environment.runner, WorkerRunner):
        return None  # shapes tick on the master only
    shapes = _installed.get(environment)
    if shapes is None:
        shapes = _installed[environment] = {cls.__name__: cls() for cls in SHAPES.values()}
        environment.available_shape_classes = {**(environment.available_shape_classes or {}), **shapes}
        if web_ui is not None:
            _install_web_ui(environment, web_ui, shapes)
    for shape in shapes.values():
        shape.runner = environment.runner
        if on_step is not None:
            shape.on_step = on_step
    name = getattr(options, "load_shape", NO_SHAPE) or NO_SHAPE
    if name == NO_SHAPE:
        if getattr(options, "shape_args", ""):
            logger.info("--shape-args applies only when a shape is chosen (--load-shape, or the web UI)")
        return None
    name = shape_name(name)
    parse_shape_args(name, getattr(options, "shape_args", ""))
    if environment.shape_class is not None and type(environment.shape_class) not in SHAPES.values():
        logger.info("--load-shape %s replaces the locustfile's %s", name, type(environment.shape_class).__name__)
    environment.shape_class = shapes[SHAPES[name].__name__]
    return environment.shape_class


def _install_web_ui(environment, web_ui, shapes: dict[str, TrafficShape]) -> None:
    from flask import jsonify, request

    @web_ui.app.before_request
    def _select_shape():
        # Locust decides between a shape and -u/-r/-t from environment.shape_class when
        # /swarm arrives; the form's load_shape field must be applied before that.
        if request.method != "POST" or not request.path.endswith("/swarm"):
            return None
        if web_ui.userclass_picker_is_active or "load_shape" not in request.form:
            return None  # the picker's shape dropdown decides
        name = request.form.get("load_shape") or NO_SHAPE
        try:
            if name == NO_SHAPE:
                environment.shape_class = None
            else:
                parse_shape_args(name, request.form.get("shape_args", ""))
                environment.shape_class = shapes[SHAPES[shape_name(name)].__name__]
        except SpecError as error:
            return jsonify({"success": False, "message": str(error), "host": environment.host})
        return None


def install(events) -> None:
    """For a locustfile of your own: register the options and select the shape at init.

    The suite's locustfile gets the same through loadtests.runtime.
    """

    @events.init_command_line_parser.add_listener
    def _add_options(parser, **_kwargs) -> None:
        add_arguments(parser)

    @events.init.add_listener
    def _on_init(environment, web_ui=None, **_kwargs) -> None:
        try:
            install_shape(environment, web_ui)
        except SpecError as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)
