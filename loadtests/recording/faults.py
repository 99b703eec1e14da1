"""What went wrong around the measurement: lost workers, Triton restarts, unreachable scrapes.

A load test is run to find out what breaks, so an outage must be on the record, not only
in the logs. The master (or single process) keeps one FaultLog per run:

    faults = FaultLog(started_at=time.time())
    faults.worker_reported("worker-1", windows=[...])          # every worker report
    faults.check_workers(runner)                                # every run-loop tick
    summary["faults"] = faults.to_json(server_stats, client_requests_by_model)

`summary.json`'s "faults" (times in seconds from the run start, like timeseries.csv):
- `workers_lost`: each worker that stopped sending heartbeats mid-run: when it was noticed,
  its last report and the start of the last window it reported, the users it ran, and
  whether its users were started again on the other workers;
- `workers_without_final_report`: each worker that was alive at the end but whose final
  report (its last windows, sent when its users stopped) had not reached the master when the
  summary was written (a worker starved of CPU around the stop): its last report and window;
- `server_restarts`: where Triton restarted between two statistics snapshots, `found_by` its
  counters going down or the client's answers (more successes than Triton's counter rose by:
  loadtests/triton_stats/statistics.py);
- `server_unreachable`: spans in which statistics snapshots failed;
- `load_generator_stalled`: each stretch of half a second or more in which a process of the
  load generator ran none of its greenlets (loadtests/recording/stalls.py): `process` ("local"
  for a single process, "master", or the worker's id), `from_s`, `to_s`, `s`;
- `unreported_requests_estimate`: per model, Triton's count minus the client's, when a
  worker was lost or sent no final report (the requests it sent but never reported); `estimate_is_lower_bound` when
  Triton also restarted, since its count then misses what the old server did after its last
  snapshot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from locust.runners import STATE_MISSING, MasterRunner

logger = logging.getLogger(__name__)


@dataclass
class LostWorker:
    worker: str
    index: int
    lost_at: float
    last_report_at: float | None
    last_window_start: float | None
    users: int
    respawned: bool


@dataclass
class FaultLog:
    """The faults of one run, on the master or single process."""

    started_at: float
    window_s: float = 1.0
    # Failed snapshots closer than this (two polling intervals) belong to one outage.
    outage_gap_s: float = 10.0
    clock: Callable[[], float] = time.time
    lost: list[LostWorker] = field(default_factory=list)
    _last_report: dict[str, float] = field(default_factory=dict)
    _last_window: dict[str, int] = field(default_factory=dict)
    _users: dict[str, int] = field(default_factory=dict)
    _final: set[str] = field(default_factory=set)
    # Workers told to stop while running, whose final report is due even if they never reported.
    _expected: set[str] = field(default_factory=set)
    # (process, from, to) in Unix s: the load generator's stalls (loadtests/recording/stalls.py).
    _stalls: list[tuple[str, float, float]] = field(default_factory=list)

    def worker_reported(self, worker: str, windows: list[dict], users: int | None = None, final: bool = False) -> None:
        """A worker's report; `final` once its users have stopped (its last windows are in)."""
        self._last_report[worker] = self.clock()
        if final:
            self._final.add(worker)
        else:
            self._final.discard(worker)
        keys = [int(message["window"]) for message in windows]
        if keys:
            self._last_window[worker] = max(keys + [self._last_window.get(worker, keys[0])])
        if users is not None:
            self._users[worker] = users

    def stalled(self, process: str, stalls) -> None:
        """Stalls of one process ("local", "master" or a worker's id), (from, to) in Unix s."""
        for start, end in stalls:
            logger.warning("load generator (%s) stalled for %.1f s: it sent and read nothing", process, end - start)
            self._stalls.append((process, float(start), float(end)))

    def expect_final_reports(self, workers: set[str]) -> None:
        """Workers just told to stop: each owes a final report, whether or not it reported yet."""
        self._expected |= workers

    def workers_done(self) -> bool:
        """Every worker that reported in this run (or was told to stop) has sent its final report, or was lost."""
        return not self.without_final_report()

    def without_final_report(self) -> list[str]:
        """Workers that reported in this run but neither sent their final report nor were lost."""
        lost = {lost.worker for lost in self.lost}
        return sorted(w for w in self._last_report.keys() | self._expected if w not in self._final and w not in lost)

    def check_workers(self, runner: Any, running: bool) -> list[LostWorker]:
        """Note workers Locust has marked missing since the last call; start their users again
        on the remaining workers while the run goes on (Locust's rebalancing, done whether or
        not --enable-rebalancing was given: a load test should keep its load)."""
        if not isinstance(runner, MasterRunner):
            return []
        known = {lost.worker for lost in self.lost}
        new = []
        for node in runner.clients.all:
            if node.state != STATE_MISSING or node.id in known:
                continue
            respawn = running and runner.worker_count > 0 and not runner.rebalancing_enabled()
            last_window = self._last_window.get(node.id)
            lost = LostWorker(
                worker=node.id,
                index=runner.get_worker_index(node.id),
                lost_at=self.clock(),
                last_report_at=self._last_report.get(node.id),
                last_window_start=last_window * self.window_s if last_window is not None else None,
                users=self._users.get(node.id, 0),
                respawned=running and runner.worker_count > 0,
            )
            self.lost.append(lost)
            new.append(lost)
            logger.warning(
                "worker %s (index %d) lost: no heartbeat; its unreported requests are missing from the "
                "client counts (estimated from Triton's at the end); its users %s",
                node.id,
                lost.index,
                "are started again on the other workers" if lost.respawned else "are not started again",
            )
            if respawn:
                runner.start(runner.target_user_count, runner.spawn_rate)
        return new

    def to_json(
        self,
        restarts: list[dict],
        scrape_errors: list[dict],
        server_requests: dict[str, int],
        client_requests: dict[str, int],
    ) -> dict[str, Any]:
        """summary.json's "faults" (empty lists when nothing went wrong)."""
        out: dict[str, Any] = {
            "workers_lost": [self._lost_json(lost) for lost in self.lost],
            **({"workers_without_final_report": unfinished} if (unfinished := self._unfinished_json()) else {}),
            "server_restarts": [
                {
                    "after_s": self._rel(restart["after_s"]),
                    "before_s": self._rel(restart["before_s"]),
                    "models": restart["models"],
                    "found_by": restart["found_by"],
                }
                for restart in restarts
            ],
            "server_unreachable": self._unreachable(scrape_errors),
            "load_generator_stalled": [
                {"process": process, "from_s": self._rel(start), "to_s": self._rel(end), "s": round(end - start, 3)}
                for process, start, end in sorted(self._stalls, key=lambda stall: stall[1])
            ],
        }
        if self.lost or unfinished:
            out["unreported_requests_estimate"] = {
                model: max(0, server_requests.get(model, 0) - client_requests.get(model, 0))
                for model in sorted(client_requests)
            }
            # Triton's count misses what a restarted server did after its last snapshot.
            out["estimate_is_lower_bound"] = bool(restarts)
        return out

    def _unfinished_json(self) -> list[dict[str, Any]]:
        out = []
        for worker in self.without_final_report():
            last_window = self._last_window.get(worker)
            out.append(
                {
                    "worker": worker,
                    "last_report_s": self._rel(self._last_report.get(worker)),
                    "last_window_s": self._rel(last_window * self.window_s) if last_window is not None else None,
                }
            )
            logger.warning("worker %s sent no final report in time: its last requests are not in the counts", worker)
        return out

    def _rel(self, time_s: float | None) -> float | None:
        return None if time_s is None else round(time_s - self.started_at, 3)

    def _lost_json(self, lost: LostWorker) -> dict[str, Any]:
        return {
            "worker": lost.worker,
            "index": lost.index,
            "lost_at_s": self._rel(lost.lost_at),
            "last_report_s": self._rel(lost.last_report_at),
            "last_window_s": self._rel(lost.last_window_start),
            "users": lost.users,
            "users_respawned": lost.respawned,
        }

    def _unreachable(self, errors: list[dict]) -> list[dict]:
        """Consecutive failed snapshots merged into spans (a gap of two intervals splits them)."""
        spans: list[dict] = []
        for error in sorted(errors, key=lambda e: e["time_s"]):
            if spans and error["time_s"] - spans[-1]["_to"] <= self.outage_gap_s:
                spans[-1]["_to"] = error["time_s"]
                spans[-1]["failed_snapshots"] += 1
            else:
                spans.append({"_from": error["time_s"], "_to": error["time_s"], "failed_snapshots": 1})
        return [
            {"from_s": self._rel(s["_from"]), "to_s": self._rel(s["_to"]), "failed_snapshots": s["failed_snapshots"]}
            for s in spans
        ]
