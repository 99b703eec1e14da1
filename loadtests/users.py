"""Locust users that send Triton inference traffic, one class per workload and protocol.

All six share `TritonUser`; they differ only in two class attributes, `workload`
(what the payload is) and `protocol` (which client sends it):

    locust -f locustfile.py --headless -u 8 -t 1m BertQAHttpUser ResNetGrpcUser
    locust -f locustfile.py --headless -u 4 -t 30s TritonGrpcUser --model identity --shape INPUT0:16

Each user opens one connection in on_start and closes it in on_stop, sends
back-to-back requests (closed loop, perf_analyzer's concurrency mode) until Locust
stops it (the request in flight always finishes), and picks
each request's batch size from --batch-size and its body from a pool built before
the first request.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from locust import User, constant, task
from locust.user.task import LOCUST_STATE_STOPPING

from loadtests.clients import TritonClient, open_client
from loadtests.endpoints import Endpoint
from loadtests.errors import StartupError
from loadtests.runtime import runtime_for


class TritonUser(User):
    """Base class: one Triton client per user, requests from the endpoint's prepared pool."""

    abstract = True
    workload: ClassVar[str] = ""
    protocol: ClassVar[str] = ""
    wait_time = constant(0)

    endpoint: Endpoint
    client: TritonClient

    def on_start(self) -> None:
        runtime = runtime_for(self.environment)
        try:
            self.endpoint = runtime.endpoint(self.workload, self.protocol)
        except StartupError as error:
            runtime.fail_startup(error)
            self.stop(force=True)
            return
        self.client = open_client(self.protocol, runtime.settings, self.environment.events.request)
        self.rng = np.random.default_rng(runtime.next_user_seed())

    @task
    def infer(self) -> None:
        # One task that loops, instead of one task per request: between tasks Locust marks a
        # user "waiting", and a graceful stop kills a waiting user with an asynchronous kill
        # that can land in the *next* request (seen as GreenletExit mid-request under load).
        # Inside this loop the user stays "running", so a stop lets the request in flight
        # finish; the loop ends when Locust marks the user "stopping".
        while self._state != LOCUST_STATE_STOPPING:
            self.client.infer(self.endpoint.pick(self.rng), self.endpoint.validator)

    def on_stop(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()


class BertQAHttpUser(TritonUser):
    """BERT-QA question/context pairs over HTTP (default model bert_qa_dynbatch)."""

    workload = "bert_qa"
    protocol = "http"


class BertQAGrpcUser(TritonUser):
    """BERT-QA question/context pairs over gRPC (default model bert_qa_dynbatch)."""

    workload = "bert_qa"
    protocol = "grpc"


class ResNetHttpUser(TritonUser):
    """Real images, resized and normalised for a ResNet-style model, over HTTP (default resnet50)."""

    workload = "resnet"
    protocol = "http"


class ResNetGrpcUser(TritonUser):
    """Real images, resized and normalised for a ResNet-style model, over gRPC (default resnet50)."""

    workload = "resnet"
    protocol = "grpc"


class TritonHttpUser(TritonUser):
    """Any model (--model), inputs from its metadata or a perf_analyzer --input-data file, over HTTP."""

    workload = "generic"
    protocol = "http"


class TritonGrpcUser(TritonUser):
    """Any model (--model), inputs from its metadata or a perf_analyzer --input-data file, over gRPC."""

    workload = "generic"
    protocol = "grpc"


__all__ = [
    "BertQAGrpcUser",
    "BertQAHttpUser",
    "ResNetGrpcUser",
    "ResNetHttpUser",
    "TritonGrpcUser",
    "TritonHttpUser",
    "TritonUser",
]
