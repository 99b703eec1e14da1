"""A run's life on the master or single process: its directory, server watch, windows and end.

    init          -> headless without a load shape: -t timed by the suite, from the end of its start
    test_start    -> a new run directory, Triton's metadata, the server pollers, the run loop;
                     fires run_started; then -t's timer
    step_started  -> steps.json, and Triton's statistics read at the step's boundary
    (run loop)    -> every window: local data merged, users noted, old windows closed
                     (each fires window_closed)
    test_stop     -> fires run_stopping; the single process finishes now, the master once
                     its workers' final reports are in; with no run (stopped inside test_start)
                     one error line
    quitting      -> finishes a run still open (Ctrl-C, an error); Ctrl-C inside test_start:
                     the error line
Finishing (once per run, `finish.py`) writes summary.json complete and fires run_finished.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

import gevent
from locust.runners import (
    STATE_CLEANUP,
    STATE_INIT,
    STATE_MISSING,
    STATE_RUNNING,
    STATE_SPAWNING,
    STATE_STOPPED,
    STATE_STOPPING,
    MasterRunner,
)

from loadtests.errors import ServerError, StartupError
from loadtests.events import RunStarted
from loadtests.options.reading import give_back_run_time, take_run_time
from loadtests.recording.console import behind_schedule_warnings
from loadtests.recording.faults import FaultLog
from loadtests.recording.run_dir import RunDirectory
from loadtests.recording.throttling import add as add_throttle
from loadtests.recording.windows import RunAggregator
from loadtests.run.active_run import ActiveRun
from loadtests.run.finish import finish_run
from loadtests.run.process import SuiteProcess
from loadtests.run.role import Role
from loadtests.run.shipping import STOP_MESSAGE
from loadtests.run.stopping import STOP_GRACE_S, StopGrace
from loadtests.triton_stats.poller import (
    ServerStatsPoller,
    ServerWatch,
    candidates,
    fetch_triton_info,
    ready_models,
    watched_models,
)
from loadtests.triton_stats.statistics import compute_delta

logger = logging.getLogger(__name__)
# The master waits for every worker's final report (sent when its users have stopped) at
# most this long past the stop grace; a worker that sends nothing by then is named in
# summary.json's faults (workers_without_final_report).
FINAL_REPORT_MARGIN_S = 0.5
# A single process drains its own recorder just before it closes windows, so a window can
# close soon after it ends (a master keeps the aggregator's grace for workers' reports).
LOCAL_GRACE_S = 1.0
# How often the run loop merges and closes windows (at most once per window): closed
# windows reach window_closed listeners such as the sweep shape within about a second.
RUN_LOOP_S = 1.0


class _NoRunTimeLine(logging.Filter):
    """Locust's "No run time limit set" line, false where the suite times -t (take_run_time)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No run time limit set")


# How many times Locust fired test_start in this process (count_test_start, the suite's first
# listener), kept on its events object.
TEST_STARTS = "triton_loadtest_test_starts"


def count_test_start(environment, **_kwargs) -> None:
    events = environment.events
    setattr(events, TEST_STARTS, getattr(events, TEST_STARTS, 0) + 1)


class RunLifecycle:
    """Records one run at a time (master or single process)."""

    def __init__(self, process: SuiteProcess, grace: StopGrace, target_rate: Callable[[], float | None]) -> None:
        self.process = process
        self.environment = process.environment
        self.events = process.events
        self.grace = grace
        self.target_rate = target_rate
        self.active: ActiveRun | None = None
        self.last: ActiveRun | None = None  # the finished run (live views keep showing it)
        self.start_failed = False  # the suite's start raised (its error is said where it was raised)
        self.starts_judged = 0  # test_start firings whose outcome is known (a run, or an error said)
        self.run_time_s: float | None = None  # -t, when the suite times it (take_run_time)
        self.run_timer: gevent.Greenlet | None = None

    def register(self) -> None:
        locust_events = self.environment.events
        locust_events.test_start.add_listener(self.on_test_start)
        locust_events.test_stop.add_listener(self.on_test_stop)
        locust_events.quitting.add_listener(self.on_quitting)
        locust_events.quit.add_listener(self.process.console.release)  # after Locust's own table
        self.events.step_started.add_listener(self.on_step_started)

    def take_run_time(self) -> None:
        """At init, headless without a load shape: the suite times -t itself, from the end of its
        start (run_time_started), so the test_start listeners (the suite reading Triton, a
        locustfile's own setup) delay the load and never cut it. Locust times it from the test's
        start, listeners included: a 2-s run whose start took longer sent nothing (fresh71, and
        fresh78 with 4 s). A load shape keeps its own clock, which starts after test_start."""
        options = self.environment.parsed_options
        settings = self.process.settings
        if not (settings.headless and settings.run_time_s and options.run_time) or self.environment.shape_class:
            return
        self.run_time_s = settings.run_time_s
        take_run_time(options)  # Locust sets no timer: it would say it set none, so that line is left out
        logging.getLogger("locust.main").addFilter(_NoRunTimeLine())

    def run_time_started(self) -> None:
        if self.run_time_s is None or self.run_timer is not None:
            return
        logger.info("Run time limit set to %g seconds, from the start of load", self.run_time_s)
        # Locust decided on its own timer before the test started, and reads -t again as it ends.
        give_back_run_time(self.environment.parsed_options)
        self.run_timer = gevent.spawn_later(self.run_time_s, self._run_time_reached)

    def _run_time_reached(self) -> None:
        logger.info("--run-time limit reached, shutting down")  # Locust's own words for its timer
        self.environment.runner.quit()

    # -- start ----------------------------------------------------------------------------
    def on_test_start(self, **_kwargs) -> None:
        if self.process.rejected is not None:
            return
        self.start_failed = False
        self.process.take_cpu()
        self.process.take_throttle()
        self.process.take_stalls()
        self.finish()  # a previous web-UI run that was never finished
        try:
            self.start()
        except Exception:
            self.start_failed = True
            self.run_time_started()  # the run still ends on time
            raise
        self.starts_judged = getattr(self.environment.events, TEST_STARTS, 0)
        self.run_time_started()

    def stopped_before_the_run(self) -> None:
        """test_stop with no run recorded: Locust stopped the test while its test_start listeners
        (the suite's start above, or a locustfile's own) still ran, killing them, so no user
        started. Said, not a silent exit 0 without a run directory; unattended, the run's error."""
        fired = getattr(self.environment.events, TEST_STARTS, 0)
        if fired == self.starts_judged or self.process.rejected is not None or self.start_failed:
            return  # no test started (a web UI quit before any), or its outcome is said already
        self.starts_judged = fired
        settings = self.process.settings
        message = (
            "the test stopped before its run began: its test_start listeners (the suite reading Triton's models "
            "and statistics, or the locustfile's own) had not finished, so no user started and nothing was sent"
        )
        if settings.run_time_s and self.run_time_s is None:  # Locust's timer, not the suite's
            message += (
                f"; --run-time {settings.run_time_s:g}s counts from the test's start, listeners included: "
                "give a longer one"
            )
        if settings.starts_at_once:
            self.process.fail_startup(StartupError(message))
        else:  # the web UI: the next test from the form may run
            logger.warning("%s", message)

    def start(self) -> None:
        settings = self.process.settings
        if settings.headless:  # Locust prints its own table as it quits: the exact one comes after it
            self.process.console.hold()
        models = self.process.endpoints.models()
        # HTTP, or gRPC for a gRPC-only target (pre-flight asked; triton_stats/poller.py).
        stats_address = self.process.statistics_address or candidates(settings)[0]
        # Server and model metadata from the first replica (replicas serve the same models).
        triton = fetch_triton_info(stats_address, models, security=settings.security)
        directory = RunDirectory.create(
            settings,
            [cls.__name__ for cls in self.environment.user_classes],
            triton=triton,
            window_s=settings.window_s,
            payloads=self.process.endpoints.payloads(),
        )
        logger.info("run directory: %s", directory.path)
        watched = watched_models(triton)  # ensembles' composing models too: Triton counts each step
        # Classes whose own tasks send name their models as they run: every ready model is
        # watched from the start, and summary.json keeps those the requests named (finish.py).
        keep_models = frozenset(watched) if self.process.endpoints.own_tasks() else None
        if keep_models is not None:
            watched = sorted(keep_models.union(ready_models(stats_address, settings.security)))
        server = ServerWatch(
            stats_address,
            settings.triton_metrics,
            watched,
            settings.server_poll_s,
            self.wait_for_quiet,
            metrics_csv=directory.path / "server_metrics.csv",
            security=settings.security,
            stats_dir=directory.path,
            on_snapshot=self._snapshot_taken,
        )
        server.start()
        self.turn_tracing_on(models)
        grace = {"grace_s": LOCAL_GRACE_S} if self.process.role is Role.LOCAL else {}
        aggregator = RunAggregator(
            window_s=settings.window_s,
            sink=directory,
            started_s=directory.started_at,
            on_closed=functools.partial(self._window_closed, server.stats),
            **grace,
        )
        faults = FaultLog(directory.started_at, settings.window_s, outage_gap_s=2 * settings.server_poll_s)
        run = self.active = ActiveRun(directory, aggregator, server, faults, keep_models=keep_models)
        run.loop = gevent.spawn(self._run_loop, run)
        self.write_steps(run)  # step 0 began before test_start created the directory
        started = RunStarted(
            path=directory.path,
            started_at=directory.started_at,
            window_s=settings.window_s,
            models=tuple(models),
            snapshot_now=self._snapshot_now,
            server_delta=compute_delta,
        )
        self.events.run_started.fire(run=started)

    def turn_tracing_on(self, models: list[str]) -> None:
        """--trace-sample: Triton traces the models under test for this run (restored in finish)."""
        switch = self.process.trace_switch
        if switch is None:
            return
        self.process.traces.drain()  # requests of an earlier test are not this run's
        try:
            switch.turn_on(list(models))
        except ServerError as error:
            logger.warning("--trace-sample: Triton's tracing not turned on: %s", error)

    def _window_closed(self, stats: ServerStatsPoller, start_s: float, end_s: float, endpoints: dict) -> None:
        # The client's answers show a restart Triton's counters do not (the run's own poller: the
        # last windows close in finish(), when the run is no longer the active one).
        stats.client_window(start_s, end_s, endpoints)
        self.events.window_closed.fire(start_s=start_s, end_s=end_s, endpoints=endpoints)

    def _snapshot_now(self):
        """Triton's statistics read now (None if it did not answer or no run is recorded)."""
        run = self.active
        return run.server.stats.snapshot_now() if run is not None else None

    def _snapshot_taken(self, snapshot) -> None:
        """Every snapshot the server watch takes (periodic, on demand, the last) reaches listeners."""
        self.events.server_snapshot_taken.fire(snapshot=snapshot)

    def wait_for_quiet(self) -> None:
        """Before housekeeping that blocks the loop: wait for a gap in this process's send schedule."""
        if self.process.sender is not None:
            self.process.sender.wait_for_quiet()

    # -- steps ----------------------------------------------------------------------------
    def on_step_started(self, step, **_kwargs) -> None:
        """A load-shape step starts: its boundary in steps.json, and Triton's statistics read
        right there, as the step's users start, so each step's server breakdown is its own (not
        blended from a polling interval that spans two steps)."""
        run = self.active
        if run is None:
            return
        self.write_steps(run)
        if step.index > 0:  # step 0 starts with the run's first snapshot
            # In a greenlet of its own: this runs inside the shape's tick, and the step's users
            # start only when the tick returns. A busy Triton took seconds to answer, and the
            # step's users came that much late. The run's last snapshot waits for it.
            run.server.stats.snapshot_soon()

    def write_steps(self, run: ActiveRun, final: bool = False) -> None:
        """steps.json: the load shape's step boundaries, on the run directory's clock."""
        shape = self.environment.shape_class
        if getattr(shape, "profile", None) is not None and not run.directory.finished:
            steps = shape.record(relative_to=run.directory.started_at, final=final, ended_at=run.directory.stopped_at)
            run.directory.write_json("steps.json", steps)

    # -- while running --------------------------------------------------------------------
    def _run_loop(self, run: ActiveRun) -> None:
        """Every window: merge local data (single process), note users, close old windows."""
        while True:
            gevent.sleep(min(run.aggregator.window_s, RUN_LOOP_S))
            self.wait_for_quiet()
            self.collect(run)
            runner = self.environment.runner
            if counting_users(runner):
                users = runner.user_count if runner is not None else 0
                run.aggregator.note_users(users, self.target_rate(), users_by_class(runner))
            running = runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING)
            run.faults.check_workers(runner, running=running)
            run.aggregator.close_windows(workers=live_workers(runner))
            if self.process.settings.open_loop and not run.warned_behind:
                warnings = behind_schedule_warnings(run.aggregator.last_window, " (last window)")
                for warning in warnings:
                    logger.warning(warning.removeprefix("warning: "))
                run.warned_behind = bool(warnings)

    def collect(self, run: ActiveRun) -> None:
        """The single process drains its own recorder (workers ship theirs); CPU; the stop grace."""
        local = self.process.role is Role.LOCAL
        if local:
            run.aggregator.merge(self.process.recorder.drain())
            run.client_traces.extend(self.process.traces.drain())
        run.cpu_s += self.process.take_cpu()
        if local:
            run.throttle = add_throttle(run.throttle, self.process.take_throttle())
        # The master's own stalls count too: its shape ticks and window closing wait on them.
        run.faults.stalled("local" if local else "master", self.process.take_stalls())
        # The master has no users: it follows the workers' slowest through the merged histograms.
        self.grace.follow(max(self.process.slowest_ms, run.merged_slowest_ms()))

    # -- the end --------------------------------------------------------------------------
    def on_test_stop(self, **_kwargs) -> None:
        run = self.active
        if run is None:
            self.stopped_before_the_run()
            return
        run.directory.stopped_at = time.time()
        self.write_steps(run, final=True)  # the last step ends at the real stop
        self.events.run_stopping.fire(stopped_at=run.directory.stopped_at)
        if self.process.role is Role.LOCAL:
            self.finish()
            return
        self.stop_workers(run)

        def finish_when_workers_reported() -> None:
            self.wait_for_final_reports(run)
            if self.active is run:
                self.finish()

        # Workers send their last windows once their users have stopped; quitting may come first.
        gevent.spawn(finish_when_workers_reported)

    def on_quitting(self, **_kwargs) -> None:
        self.process.console.hold()
        runner = self.environment.runner
        if self.active is None:
            # Ctrl-C inside test_start: said now, while Locust has yet to choose its exit code
            # (its test_stop comes after, when the shutdown quits the runner).
            self.stopped_before_the_run()
        if self.active is not None and runner is not None and runner.state not in (STATE_STOPPED, STATE_INIT):
            # Ctrl-C: Locust fires quitting before it stops the runner. Stop it first (users
            # finish their in-flight requests, workers send their final reports), so nothing
            # measured is left out of the run directory.
            runner.quit()
        if self.active is not None and self.process.role is Role.MASTER:
            self.wait_for_final_reports(self.active)
        self.finish()

    def stop_workers(self, run: ActiveRun) -> None:
        """On the master at its test_stop: workers whose users still run (Locust's quit() tells
        them only after this, and stops listening 0.5 s later) stop now, and the master waits
        for their final reports here, while Locust still listens (run/shipping.py)."""
        runner = self.environment.runner
        running = {client.id for client in runner.clients.all if client.state in (STATE_SPAWNING, STATE_RUNNING)}
        for worker in running:
            runner.send_message(STOP_MESSAGE, None, client_id=worker)
        run.faults.expect_final_reports(running)
        self.wait_for_final_reports(run)

    def wait_for_final_reports(self, run: ActiveRun) -> None:
        """On the master: until every worker that reported has sent its final report (its users
        stopped), or the stop grace and a margin have passed (one deadline per run)."""
        if run.reports_due_by is None:
            run.reports_due_by = (
                time.monotonic() + (self.environment.stop_timeout or STOP_GRACE_S) + FINAL_REPORT_MARGIN_S
            )
        while not run.faults.workers_done() and time.monotonic() < run.reports_due_by:
            gevent.sleep(0.05)

    def finish(self) -> None:
        """Close every window, stop the pollers, write the summary once. Idempotent."""
        run, self.active = self.active, None
        if run is None:
            return
        if run.loop is not None:
            run.loop.kill(block=False)
        self.collect(run)
        # A master: the run ended when its last worker's users stopped (a worker's clock behind
        # the master's by more than the run is no measure: the master's own stop stays then).
        workers_stopped_at = max(run.workers_stopped_s.values(), default=0.0)
        if workers_stopped_at > run.directory.started_at:
            run.directory.stopped_at = workers_stopped_at
            self.write_steps(run, final=True)
        self.last = run
        finish_run(self.process, run)


def live_workers(runner) -> tuple[str, ...]:
    """The ids of the master's workers that are not missing (none in a single process): a window
    closes once each of them has drained past it (recording/windows.py)."""
    if not isinstance(runner, MasterRunner):
        return ()
    return tuple(node.id for node in runner.clients.all if node.state != STATE_MISSING)


def users_by_class(runner) -> dict[str, int] | None:
    """Running users per user class: the master counts its workers' reports (its own
    user_classes_count counts local greenlets, none there); a local runner its greenlets."""
    if runner is None:
        return None
    if hasattr(runner, "reported_user_classes_count"):
        return dict(runner.reported_user_classes_count)
    return dict(runner.user_classes_count)


def counting_users(runner) -> bool:
    """Whether the user count now is the run's: not while Locust stops the users at the end
    (then it falls user by user, and the last window kept the count of a half-stopped run)."""
    return runner is None or runner.state not in (STATE_CLEANUP, STATE_STOPPING)
