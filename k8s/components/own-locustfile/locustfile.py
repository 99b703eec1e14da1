# Your own locustfile on the cluster (k8s/components/own-locustfile): replace this file with
# yours and name its classes in the component's user-classes. This one sends two kinds of
# request to `identity`, the model of overlays/cpu, over gRPC, with think time between tasks.
import numpy as np
from locust import between, task

from loadtests import TritonGrpcUser


class Journey(TritonGrpcUser):
    wait_time = between(0.05, 0.2)

    @task(3)
    def one(self):
        self.client.infer("identity", {"INPUT0": np.ones((1, 16), np.float32)}, name="identity x1")

    @task
    def eight(self):
        self.client.infer("identity", {"INPUT0": np.ones((8, 16), np.float32)}, name="identity x8")
