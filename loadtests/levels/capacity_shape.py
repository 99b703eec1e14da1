"""The capacity search as a load shape: open-loop rate levels chosen by CapacitySearch.

    locust -f locustfile.py --headless TritonHttpUser --model sleep_10ms_single --traffic constant \\
        --window 2 --load-shape capacity --shape-args "slo=p99<50ms;fail_ratio<0.001,start=10"

`python -m loadtests capacity` (loadtests/commands/capacity.py) builds that command line;
docs/guides/capacity.md explains the output. Every level is a sweep level (sweep_shape.py): the rate
goes out as `target_rate_changed`, the change's window and `settle` more are discarded, and
the level is held until stable by perf_analyzer's rule (or `max_trials` windows). Two things
differ from a sweep:

- the next rate is not from a list: when a level ends, its numbers (corrected latency, the
  way `--slo` judges an open-loop run) are judged against every SLO clause, the verdict goes
  to CapacitySearch (exponential growth, then bisection) and the search names the next rate
  or ends the run (capacity_levels.py);
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

import logging
import time
from types import SimpleNamespace
from typing import Any

from loadtests.levels import sweep_files
from loadtests.levels.capacity_files import capacity_json, write_capacity_files
from loadtests.levels.capacity_levels import (
    CAPACITY_KEYS,
    CapacityController,
    parse_capacity_args,
    slo_from_shape_arg,
)
from loadtests.levels.capacity_search import CapacitySearch
from loadtests.levels.sweep_levels import LevelResult
from loadtests.levels.sweep_shape import SPAWN_RATE, SweepProfile, SweepShape
from loadtests.traffic.profiles import RATE, Profile
from loadtests.traffic.shape import rate_shape_users

logger = logging.getLogger(__name__)

MAX_DRAIN_S = 30.0


class CapacityShape(SweepShape):
    """`--load-shape capacity --shape-args "slo=p99<50ms;fail_ratio<0.001,start=10"` (open loop only)."""

    name = "capacity"
    keys = CAPACITY_KEYS

    @classmethod
    def parse_args(cls, text: str | None) -> dict[str, Any]:
        return parse_capacity_args(text)

    def load(self) -> Profile:
        settings = self.settings()
        self.args = self.parse_args(settings.shape_args)
        self.args.setdefault("users", rate_shape_users(self.name, settings, what=""))
        self.window_s = settings.window_s
        search = CapacitySearch(
            start_rate=self.args["start"],
            growth=self.args["growth"],
            precision=self.args["precision"] / 100,
            ceiling_hint=self.args.get("probe"),
        )
        self.controller = CapacityController(
            search,
            slo_from_shape_arg(self.args["slo"]),
            stability_percent=self.args["stability"],
            max_trials=self.args["max_trials"],
            settle=self.args["settle"],
            server_delta=self._server_delta,
        )
        self.profile = SweepProfile(self, RATE)
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
                self.set_rate(0.0)
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
            "probe_rps": self.args.get("probe"),
        }

    def write_results(self) -> None:
        """capacity.json/csv (levels as tried) and sweep.json/csv (levels by rate, for the report)."""
        run, controller = self.run, self.controller
        if run is None or controller is None:
            return
        settings = self.settings_json()
        by_rate = SimpleNamespace(
            results=sorted(controller.results, key=lambda result: result.level),
            kind=RATE,
            stopped_by=controller.stopped_by,
        )
        try:
            sweep_files.write(run.path, by_rate, relative_to=run.started_at, settings=settings)
            write_capacity_files(run.path, capacity_json(controller, run.started_at, settings))
        except OSError:
            logger.exception("capacity: could not write the results")
