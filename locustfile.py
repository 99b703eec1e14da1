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

# Every user class of the workload kinds' table (loadtests/workloads/kinds.py): Locust offers
# the classes it finds in this module, so a new kind's classes appear here with no edit.
from loadtests.workloads.users import *  # noqa: E402, F403

run.install(events)
