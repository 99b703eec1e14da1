"""Load profiles: a target (users, or a request rate) as a pure function of elapsed time.

No Locust here: `TrafficShape` (loadtests/traffic/shape.py) turns a profile into ticks.
`read_trace` reads the `trace` shape's CSV (`time_s,users` or `time_s,rate`).
"""

from __future__ import annotations

import bisect
import csv
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from loadtests.errors import SpecError
from loadtests.traffic.steps import Step

USERS = "users"  # a target that is a user count (closed loop)
RATE = "rate"  # a target that is a request rate (open loop)
TARGET_KINDS = (USERS, RATE)


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
