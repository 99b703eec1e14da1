"""triton-loadtest: Locust-based load testing for NVIDIA Triton Inference Server.

A locustfile of your own imports the user bases, and importing is all it needs (the suite
registers its options and listeners on Locust's events then, once however many files import it):

    from locust import between, task
    from loadtests import TritonHttpUser

    class MyUser(TritonHttpUser):
        wait_time = between(0.5, 1)

        @task
        def ask(self):
            self.client.infer("identity", {"INPUT0": numpy.ones((1, 16), numpy.float32)})

The bases are abstract (Locust runs only the classes a locustfile declares); the suite's own
concrete classes are in loadtests/locustfile.py (`triton-loadtest locustfile` prints its path).
Loaded on first use, so that `import loadtests.run_format` (analysis/) needs no Locust.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loadtests.version import __version__
    from loadtests.workloads.task_client import Answer, TaskClient
    from loadtests.workloads.users import (
        BertQAGrpcUser,
        BertQAHttpUser,
        ResNetGrpcUser,
        ResNetHttpUser,
        TritonGrpcUser,
        TritonHttpUser,
        TritonSequenceGrpcUser,
        TritonSequenceHttpUser,
        TritonUser,
    )

__all__ = [
    "Answer",
    "BertQAGrpcUser",
    "BertQAHttpUser",
    "ResNetGrpcUser",
    "ResNetHttpUser",
    "TaskClient",
    "TritonGrpcUser",
    "TritonHttpUser",
    "TritonSequenceGrpcUser",
    "TritonSequenceHttpUser",
    "TritonUser",
    "__version__",
]
CLIENT = ("Answer", "TaskClient")


def __getattr__(name: str):
    if name == "__version__":  # loaded on use too: analysis/ imports only run_format and errors
        from loadtests.version import __version__

        return __version__
    if name in __all__ and name.endswith("User"):
        from locust import events

        from loadtests import run
        from loadtests.workloads import users

        run.install(events)
        return getattr(users, name)
    if name in CLIENT:
        from loadtests.workloads import task_client

        return getattr(task_client, name)
    raise AttributeError(f"module 'loadtests' has no attribute {name!r}")
