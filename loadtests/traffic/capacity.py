"""The capacity search as a load shape: open-loop rate levels chosen by CapacitySearch.

    locust -f locustfile.py --headless TritonHttpUser --model sleep_10ms_single --traffic constant \\
        --window 2 --load-shape capacity --shape-args "slo=p99<50ms;fail_ratio<0.001,start=10"

`python -m loadtests capacity` (loadtests/capacity.py) builds that command line; docs/capacity.md
explains the output. Every level is a sweep level (loadtests/traffic/sweep.py): the rate is
handed to open-loop traffic, the change's window and `settle` more are discarded, and the
level is held until stable by perf_analyzer's rule (or `max_trials` windows). Two things
differ from a sweep:

- the next rate is not from a list: when a level ends, its numbers (corrected latency, the
  way `--slo` judges an open-loop run) are judged against every SLO clause, the verdict goes
  to CapacitySearch (exponential growth, then bisection) and the search names the next rate
  or ends the run;
- a level ends at once when one of its windows is clearly failing (`clearly_failing`: a
  latency clause's metric far past its limit, many failures, or many late requests): no need
  to wait for a failing level to be stable.

A failure is confirmed before the search believes it: a level that fails below any confirmed
failure is measured once more (after draining), and only a second failure counts; a pass
then counts as a pass. On a shared machine one scheduling hiccup can put a level's p99 over
the limit, and a single false failure would otherwise pin the bisection below the capacity
for the rest of the search. A failure above a confirmed one is consistent and not repeated,
nor is a level stopped early that completed under 90 % of its rate (the server cannot keep up).
A level with dropped requests (the in-flight limit was reached) fails: its rate was not offered.
After a failing level the rate is set to 0 until its requests have drained (the level's
slowest response from the actual send, at least one window, at most MAX_DRAIN_S): the send
schedule's debt and the server's queue would otherwise carry into the next, lower level and
fail it too (a sweep only goes up, so it never needs this).
SLO clauses are separated by ';' inside --shape-args (commas separate the shape's keys).
Writes capacity.json and capacity.csv (every level in the order tried, and the verdict) and,
for the report, sweep.json/sweep.csv with the levels in rate order.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from loadtests.errors import SpecError
from loadtests.run_format import slo
from loadtests.run_format.files import CAPACITY_CSV, CAPACITY_JSON
from loadtests.traffic import shapes
from loadtests.traffic.capacity_search import (
    DEFAULT_GROWTH,
    DEFAULT_PRECISION,
    CapacitySearch,
    clearly_failing,
)
from loadtests.traffic.sweep import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_SETTLE_WINDOWS,
    DEFAULT_STABILITY_PERCENT,
    SPAWN_RATE,
    STABILITY_WINDOWS,
    LevelResult,
    SweepController,
    SweepShape,
    Trial,
    _int_arg,
    _percent_arg,
    _SweepProfile,
)

logger = logging.getLogger(__name__)

CAPACITY_KEYS = ("slo", "start", "growth", "precision", "stability", "max_trials", "settle", "users")
CSV_COLUMNS = (
    "order",
    "rate",
    "passed",
    "stopped_early",
    "to_confirm",
    "stable",
    "windows",
    "throughput_rps",
    "requests",
    "failures",
    "late",
    "dropped",
    "p50_us",
    "p95_us",
    "p99_us",
    "p99.9_us",
)
DEFAULT_START_RATE = 10.0
MAX_DRAIN_S = 30.0
# A level stopped early that completed under this share of its rate is overloaded beyond doubt.
OVERLOADED_SHARE = 0.9


# -- input ------------------------------------------------------------------------------------
def slo_from_shape_arg(text: str) -> list[slo.Clause]:
    """'p99<50ms;fail_ratio<0.001' -> clauses (raises slo.SloError)."""
    clauses = slo.parse_slo(text.replace(";", ","))
    if not clauses:
        raise slo.SloError("is empty (e.g. slo=p99<50ms)")
    return clauses


def _positive(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError("must be a positive number")
    return value


def _above_one(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 1:
        raise ValueError("must be a number above 1")
    return value


_CONVERTERS = {
    "slo": lambda text: (slo_from_shape_arg(text), text)[1],
    "start": _positive,
    "growth": _above_one,
    "precision": _positive,
    "stability": _percent_arg,
    "max_trials": _int_arg(STABILITY_WINDOWS),
    "settle": _int_arg(0),
    "users": _int_arg(1),
}


def parse_capacity_args(text: str | None) -> dict[str, Any]:
    """`--shape-args` of the capacity shape, defaults filled in; raises SpecError.

    >>> parse_capacity_args("slo=p99<50ms;fail_ratio<0.001")["precision"]
    5.0
    """
    accepted = f"(accepted keys: {', '.join(CAPACITY_KEYS)})"
    try:
        args = shapes.split_shape_args(text, CAPACITY_KEYS, _CONVERTERS)
    except (shapes.ShapeArgError, slo.SloError) as error:
        raise SpecError(f"--shape-args for capacity: {error} {accepted}") from None
    if "slo" not in args:
        raise SpecError(f"--shape-args for capacity: missing slo= {accepted}")
    args.setdefault("start", DEFAULT_START_RATE)
    args.setdefault("growth", DEFAULT_GROWTH)
    args.setdefault("precision", DEFAULT_PRECISION * 100)
    args.setdefault("stability", DEFAULT_STABILITY_PERCENT)
    args.setdefault("max_trials", DEFAULT_MAX_TRIALS)
    args.setdefault("settle", DEFAULT_SETTLE_WINDOWS)
    return args


# -- the controller -----------------------------------------------------------------------------
def level_entry(result: LevelResult | Trial) -> dict[str, Any]:
    """A level (or one window) as a summary.json endpoint entry, for loadtests.run_format.slo."""
    stats = result.stats
    duration_s = result.duration_s if isinstance(result, LevelResult) else result.window_s
    return {
        "name": stats.name,
        "requests": stats.requests,
        "failures": stats.failure_count,
        "failures_by_class": dict(stats.failures),
        "inferences": stats.inferences,
        "duration_s": duration_s,
        "throughput_rps": stats.requests / duration_s,
        "throughput_infer_per_s": stats.inferences / duration_s,
        "latency_us": stats.latency_summary_us(),
        "late": stats.late,
        "dropped": stats.dropped,
    }


def judge(result: LevelResult, clauses: list[slo.Clause]) -> tuple[bool, list[slo.Result]]:
    """Whether a level met every clause (and dropped nothing), with each clause's result."""
    entry = level_entry(result)
    # The level's own histogram: `@95%` clauses (and the MLPerf presets) are judged on its bounds.
    results = slo.evaluate(clauses, lambda _target: entry, lambda _target: result.stats.histogram)
    return (entry["dropped"] == 0 and not slo.failed(results)), results


class CapacityController(SweepController):
    """A SweepController whose next level comes from a CapacitySearch (one rate at a time)."""

    def __init__(self, search: CapacitySearch, clauses: list[slo.Clause], **sweep: Any) -> None:
        super().__init__(levels=[search.start_rate], kind=shapes.RATE, **sweep)
        self.search = search
        self.clauses = clauses
        self.verdicts: list[dict[str, Any]] = []  # one per finished level, in the order tried
        self.confirming: float | None = None  # the rate being measured again after a failure

    def _add(self, trial: Trial) -> LevelResult | None:
        reason = clearly_failing(level_entry(trial), self.clauses) if trial.stats.requests else None
        if reason is not None:
            self.trials.append(trial)
            result = self._result(stable=False)
            self.results.append(result)
            self.index += 1
            return self._decide(result, reason)
        result = super()._add(trial)
        return None if result is None else self._decide(result, None)

    def _decide(self, result: LevelResult, early: str | None) -> LevelResult:
        passed, results = judge(result, self.clauses)
        passed = passed and early is None
        rate = result.level
        confirmed_below = self.search.first_failing is not None and self.search.first_failing <= rate
        # Stopped early while completing well under the rate: the server cannot keep up, no hiccup.
        overloaded = early is not None and result.stats.requests / result.duration_s < OVERLOADED_SHARE * rate
        retry = not passed and self.confirming != rate and not confirmed_below and not overloaded
        self.verdicts.append(
            {
                "rate": rate,
                "passed": passed,
                "stopped_early": early,
                "to_confirm": retry,
                "clauses": [r.to_json() for r in results],
            }
        )
        if retry:
            self.confirming = rate
            self.levels.append(rate)
            self.stopped_by = None
            return result
        self.confirming = None
        self.search.record(rate, passed)
        following = self.search.next_rate()
        if following is None:
            self.stopped_by = "done"
        else:
            self.levels.append(round(following, 6))
            self.stopped_by = None  # the sweep's rule ended the list; the search goes on
        return result


# -- output files -------------------------------------------------------------------------------
def capacity_json(controller: CapacityController, relative_to: float, settings: dict[str, Any]) -> dict[str, Any]:
    passing, failing = controller.search.bracket
    levels = []
    for order, (result, verdict) in enumerate(zip(controller.results, controller.verdicts, strict=False), 1):
        counts = {"late": result.stats.late, "dropped": result.stats.dropped}
        levels.append({"order": order, **verdict, **result.to_json(relative_to), **counts})
    return {
        "capacity_rps": passing,
        "bracket": {"last_passing_rps": passing, "first_failing_rps": failing},
        "done": controller.done,
        "slo": settings["slo"],
        "levels_tried": len(levels),
        "settings": settings,
        "levels": levels,
    }


def write_capacity_files(directory: Path, content: dict[str, Any]) -> None:
    (directory / CAPACITY_JSON).write_text(json.dumps(content, indent=2) + "\n")
    with open(directory / CAPACITY_CSV, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for level in content["levels"]:
            latency = level["latency_us"]
            writer.writerow(
                [
                    level["order"],
                    f"{level['rate']:g}",
                    level["passed"],
                    level["stopped_early"] or "",
                    level["to_confirm"],
                    level["stable"],
                    level["windows"],
                    level["throughput_rps"],
                    level["requests"],
                    level["failures"],
                    level.get("late", ""),
                    level.get("dropped", ""),
                    *(latency[key] for key in ("p50", "p95", "p99", "p99.9")),
                ]
            )


# -- Locust ---------------------------------------------------------------------------------------
class CapacityShape(SweepShape):
    """`--load-shape capacity --shape-args "slo=p99<50ms;fail_ratio<0.001,start=10"` (open loop only)."""

    name = "capacity"

    def load(self) -> shapes.Profile:
        options = self.runner.environment.parsed_options if self.runner is not None else None
        self.args = parse_capacity_args(getattr(options, "shape_args", "") or "")
        if shapes.set_rate_target is None:
            raise SpecError(f"--load-shape capacity needs open-loop traffic ({shapes.OPEN_LOOP_HINT})")
        self.args.setdefault("users", int(getattr(options, "num_users", 0) or 1))
        self.window_s = float(getattr(options, "window", 1.0) or 1.0)
        search = CapacitySearch(
            start_rate=self.args["start"], growth=self.args["growth"], precision=self.args["precision"] / 100
        )
        self.controller = CapacityController(
            search,
            slo_from_shape_arg(self.args["slo"]),
            stability_percent=self.args["stability"],
            max_trials=self.args["max_trials"],
            settle=self.args["settle"],
            server_delta=self._server_delta,
        )
        self.profile = _SweepProfile(self, shapes.RATE)
        self.drain_until: float | None = None
        return self.profile

    def drain_s(self, result: LevelResult) -> float:
        """How long a failing level's requests may still be in flight: its slowest response
        timed from the actual send (at least one window, at most MAX_DRAIN_S)."""
        slowest = result.stats.uncorrected_summary_us() or result.stats.latency_summary_us()
        return min(MAX_DRAIN_S, max(self.window_s, slowest["max"] / 1e6))

    def tick(self) -> tuple[int, float] | None:
        controller = self.controller if self.loaded() else None
        failed_last = controller is not None and bool(controller.verdicts) and not controller.verdicts[-1]["passed"]
        if failed_last and controller.pending:
            now = time.time()
            if self.drain_until is None:
                self.drain_until = now + self.drain_s(controller.results[-1])
                shapes.set_rate_target(0.0)
                print(f"capacity: rate 0 for {self.drain_until - now:.1f} s, draining the failed level", flush=True)
            if now < self.drain_until:
                return self.args["users"], SPAWN_RATE
            self.drain_until = None
        return super().tick()

    def settings_json(self) -> dict[str, Any]:
        return {
            **super().settings_json(),
            "slo": self.args["slo"].replace(";", ","),
            "start_rate": self.args["start"],
            "growth": self.args["growth"],
            "precision_percent": self.args["precision"],
        }

    def write_results(self) -> None:
        """capacity.json/csv (levels as tried) and sweep.json/csv (levels by rate, for the report)."""
        from loadtests.recording import sweep_files

        run, controller = self.run, self.controller
        if run is None or controller is None or run.directory.finished:
            return
        settings = self.settings_json()
        by_rate = SimpleNamespace(
            results=sorted(controller.results, key=lambda result: result.level),
            kind=shapes.RATE,
            stopped_by=controller.stopped_by,
        )
        try:
            sweep_files.write(run.directory.path, by_rate, relative_to=run.directory.started_at, settings=settings)
            content = capacity_json(controller, run.directory.started_at, settings)
            write_capacity_files(run.directory.path, content)
        except OSError:
            logger.exception("capacity: could not write the results")


shapes.register_shape(CapacityShape, CAPACITY_KEYS, parse_capacity_args)
