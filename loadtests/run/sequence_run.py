"""The run's size for sequence users' correlation IDs (loadtests/workloads/sequences.py), one for all processes.

A 32-bit CORRID gives the worker index and the user slot only the bits the run needs, so
every process lays its IDs out from the same `RunSize`, fixed when the test starts:

- at init (master or single process, headless): pre-flight checks the planned size
  (--expect-workers, which --processes sets, and -u) against each sequence model: exit 2;
- master, at test_start: the workers connected (worker indexes below the highest Locust has
  given + 1) and the target user count; a size that does not fit stops the test (exit 2)
  and is not sent; else it goes to every worker before its spawn message (one socket, in
  order), so a worker knows it when its first user starts;
- worker: keeps the master's message (none yet: its users refuse a 32-bit CORRID model);
- single process: at test_start, one worker and the target user count.
"""

from __future__ import annotations

from locust.runners import WorkerRunner

from loadtests.errors import StartupError
from loadtests.run.process import SuiteProcess
from loadtests.run.role import Role
from loadtests.workloads.endpoints import Endpoint
from loadtests.workloads.sequences import IdLayout, RunSize

SIZE_MESSAGE = "triton_loadtest_sequence_run"


def check_sequence_endpoints(endpoints: list, run: RunSize) -> None:
    """Each prepared sequence endpoint's IDs fit the run; raises StartupError."""
    for endpoint in endpoints:
        if isinstance(endpoint, Endpoint) and endpoint.kind.correlation_ids:
            IdLayout.of(endpoint.model.correlation_id_type, run)


def planned_size(process: SuiteProcess) -> RunSize:
    """The size the options plan: --expect-workers workers (a master), -u users."""
    options = process.environment.parsed_options
    workers = getattr(options, "expect_workers", 1) if process.role is Role.MASTER else 1
    return RunSize.planned(workers, getattr(options, "num_users", None) or 1)


class SequenceRunSize:
    """Fixes the run's size at test start and shares it (see the module docstring)."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process

    def register(self) -> None:
        runner = self.process.environment.runner
        if isinstance(runner, WorkerRunner):
            runner.register_message(SIZE_MESSAGE, self.on_message)
        else:
            self.process.environment.events.test_start.add_listener(self.on_test_start)

    def on_message(self, msg, **_kwargs) -> None:
        self.process.sequence_run = RunSize(**msg.data)

    def on_test_start(self, **_kwargs) -> None:
        process = self.process
        if process.rejected is not None:
            return
        runner = process.environment.runner
        users = runner.target_user_count or 1
        if process.role is Role.MASTER:
            # Indexes are never reused while the master runs: all below the highest given + 1.
            run = RunSize(max(runner.worker_index_max, 1), RunSize.planned(runner.worker_count, users).users_per_worker)
        else:
            run = RunSize.planned(1, users)
        try:
            check_sequence_endpoints(list(process.endpoints.prepared.values()), run)
        except StartupError as error:
            process.rejected = error
            process.fail_startup(error)
            return
        process.sequence_run = run
        if process.role is Role.MASTER:
            runner.send_message(SIZE_MESSAGE, {"workers": run.workers, "users_per_worker": run.users_per_worker})
