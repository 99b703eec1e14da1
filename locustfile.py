"""triton-loadtest's locustfile: the user classes and options, no logic.

    locust -f locustfile.py                                  # web UI on :8089
    locust -f locustfile.py --headless -u 8 -t 1m BertQAGrpcUser --batch-size 1-8

See README.md and docs/ for the options and the run directory this writes.
"""

# grpcio must be told to cooperate with gevent before any gRPC channel exists.
from loadtests.clients.grpc import enable_gevent

enable_gevent()

from locust import events  # noqa: E402

from loadtests import run  # noqa: E402
from loadtests.workloads.users import (  # noqa: E402, F401
    BertQAGrpcUser,
    BertQAHttpUser,
    ResNetGrpcUser,
    ResNetHttpUser,
    TritonGrpcUser,
    TritonHttpUser,
    TritonSequenceGrpcUser,
    TritonSequenceHttpUser,
)

run.install(events)
