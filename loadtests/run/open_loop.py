"""Open-loop traffic across processes: the total target rate shared out, and the local sender.

    target_rate_changed(rate)  --(master)-->  RATE_MESSAGE to every worker: its share by users
                               --(single)-->  the local sender's plan
    test_start (no rate shape) --> target_rate_changed(--rate)

Each process with users runs one `OpenLoop` sender while a test runs; a worker's plan comes
from its master's last message (which may arrive before the worker's own test_start).
"""

from __future__ import annotations

import gevent
from locust.runners import WorkerRunner

from loadtests.clients import open_client
from loadtests.run.process import SuiteProcess
from loadtests.run.role import Role
from loadtests.traffic.open_loop import RATE_MESSAGE, ClientPool, OpenLoop, RatePlan

# How often the master re-sends the rate: reaches workers that join late, and follows
# user-count changes from the web UI.
REPUBLISH_S = 1.0


class RateDistribution:
    """The total open-loop rate (master or single process) and each process's share of it."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process
        self.total_rate = 0.0
        self._publisher: gevent.Greenlet | None = None

    def register(self) -> None:
        self.process.events.target_rate_changed.add_listener(self.on_target_rate)
        self.process.environment.events.test_start.add_listener(self.on_test_start)
        self.process.events.run_finished.add_listener(self.on_run_finished)

    def on_test_start(self, **_kwargs) -> None:
        settings = self.process.settings
        if self.process.rejected is not None or not settings.open_loop:
            return
        shape = self.process.environment.shape_class
        if getattr(shape, "profile", None) is None:  # a rate shape has set it in its first tick
            self.process.events.target_rate_changed.fire(rate=settings.rate)
        if self.process.role is Role.MASTER:
            self.publish()  # before the spawn messages, so workers start at their share
            self.stop_publishing()
            self._publisher = gevent.spawn(self._republish)

    def on_target_rate(self, rate: float, **_kwargs) -> None:
        self.total_rate = rate
        self.publish()

    def publish(self) -> None:
        """Tell every process with users its share: workers by message, the single process directly."""
        runner = self.process.environment.runner
        if self.process.role is Role.MASTER:
            plan = RatePlan(self.total_rate, runner.target_user_count or 0)
            runner.send_message(RATE_MESSAGE, plan.to_message())
        elif self.process.sender is not None:
            self.process.sender.set_plan(RatePlan(self.total_rate, 1))

    def current_rate(self) -> float | None:
        """The target noted with each window (None in closed loop)."""
        return self.total_rate if self.process.settings.open_loop else None

    def on_run_finished(self, **_kwargs) -> None:
        self.stop_publishing()

    def stop_publishing(self) -> None:
        if self._publisher is not None:
            self._publisher.kill(block=False)
            self._publisher = None

    def _republish(self) -> None:
        while True:
            gevent.sleep(REPUBLISH_S)
            self.publish()


class LocalSender:
    """The open-loop sender of a process with users, from test start to test stop."""

    def __init__(self, process: SuiteProcess, rates: RateDistribution | None) -> None:
        self.process = process
        self.rates = rates  # the single process's own total; None on a worker
        self.plan: RatePlan | None = None  # a worker's latest plan from its master

    def register(self) -> None:
        environment = self.process.environment
        environment.events.test_start.add_listener(self.on_test_start)
        environment.events.test_stop.add_listener(self.on_test_stop)
        if isinstance(environment.runner, WorkerRunner):
            environment.runner.register_message(RATE_MESSAGE, self.on_rate_message)

    def on_rate_message(self, msg, **_kwargs) -> None:
        self.plan = RatePlan.from_message(msg.data)
        if self.process.sender is not None:
            self.process.sender.set_plan(self.plan)

    def on_test_start(self, **_kwargs) -> None:
        self.stop()
        settings = self.process.settings
        if self.process.rejected is not None or not settings.open_loop:
            return
        runner = self.process.environment.runner
        if self.rates is None:  # a worker: its share of the master's rate
            plan, seed = self.plan, max(runner.worker_index, 0) + 1

            def local_users() -> int:
                return runner.target_user_count or 0

        else:
            plan, seed = RatePlan(self.rates.total_rate, 1), 0

            def local_users() -> int:
                return 1

        request_event = self.process.environment.events.request
        connections = self.process.connections
        clients = ClientPool(lambda protocol: open_client(protocol, settings, request_event, connections))
        self.process.sender = OpenLoop(
            settings.traffic,
            settings.max_in_flight,
            settings.drop_when_saturated,
            clients,
            local_users,
            plan,
            seed,
            burstiness=settings.burstiness or 1.0,
        )

    def on_test_stop(self, **_kwargs) -> None:
        self.stop()  # users have stopped: their in-flight requests are in

    def stop(self) -> None:
        if self.process.sender is not None:
            self.process.sender.close()
            self.process.sender = None
