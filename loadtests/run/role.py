"""The process's role in a Locust run, decided once at init from its runner."""

from __future__ import annotations

import enum

from locust.runners import MasterRunner, WorkerRunner


class Role(enum.Enum):
    """LOCAL: one process runs users and records the run; MASTER: records what its workers
    send and runs no users; WORKER: runs users and ships its windows to the master."""

    LOCAL = "local"
    MASTER = "master"
    WORKER = "worker"

    @classmethod
    def of(cls, runner: object) -> Role:
        if isinstance(runner, MasterRunner):
            return cls.MASTER
        if isinstance(runner, WorkerRunner):
            return cls.WORKER
        return cls.LOCAL

    @property
    def runs_users(self) -> bool:
        return self is not Role.MASTER

    @property
    def records_run(self) -> bool:
        """Writes the run directory (and decides the shape, the rate, the SLO verdicts)."""
        return self is not Role.WORKER
